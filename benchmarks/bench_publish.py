"""How long does `specbench publish` take on a long history, and how big is its index page?

    .venv/bin/python benchmarks/bench_publish.py [--runs 1000] [--cells 50] [--out /tmp/bench-publish]

Writes a synthetic history (OUT/history.sqlite, the schema `specbench history` writes) of RUNS runs
on one machine, each measuring CELLS cells (two pairs, draft_max x ngl, plus their baselines) on 2
prompts x 3 repetitions, with a new llama.cpp commit every 10 runs and an 8% slowdown of one pair's
spec t/s from the run at 60%; then runs `specbench publish --db OUT/history.sqlite --out OUT/site`
(no run folders: every run page says its folder is missing) and reports the wall time, the page
count and the size of the index and of the whole site. Goal: under 30 s, index under 2 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from specbench.gate.historydb import SCHEMA, SCHEMA_VERSION

MACHINE = "AMD EPYC 7B13 (synthetic) / no GPU / cpu"
PROMPTS = ("code-02", "extr-05")


def cells(n: int) -> list[dict]:
    """n cells: per pair its baselines at each ngl, then draft_max x ngl speculative cells."""
    out: list[dict] = []
    pairs = [("smol", "sha-smol-f32", "sha-smol-q4", 40.0), ("qwen", "sha-qwen-7b", "sha-qwen-05b", 12.0)]
    per_pair = n // 2
    for i, (pair, target, draft, tps) in enumerate(pairs):
        budget = per_pair if i == 0 else n - per_pair
        for ngl in (0, 99):
            out.append(dict(pair=pair, role="baseline", target=target, ngl=ngl, tps=tps * (3 if ngl else 1)))
        k = 0
        while len([c for c in out if c["pair"] == pair]) < budget:
            ngl, dmax = (0, 99)[k % 2], 1 + k // 2
            out.append(
                dict(
                    pair=pair,
                    role="speculative",
                    target=target,
                    draft=draft,
                    ngl=ngl,
                    draft_max=dmax,
                    tps=tps * (3 if ngl else 1) * (1 + 0.5 * (1 - abs(dmax - 6) / 8)),
                )
            )
            k += 1
    return out


def cell_id(c: dict) -> tuple[str, str]:
    key = {
        "role": c["role"],
        "target": c["target"],
        "draft": c.get("draft"),
        "method": "none",
        "draft_max": None,
        "draft_min": None,
        "p_min": None,
        "ngl": c["ngl"],
        "ngld": None,
        "n_predict": 128,
        "temperature": 0.0,
        "top_k": None,
        "seed": 42,
        "ctx_size": 2048,
    }
    if c["role"] == "speculative":
        key.update(method="draft", draft_max=c["draft_max"], draft_min=0, p_min=0.0, ngld=c["ngl"])
        label = (
            f"{c['pair']} draft draft_max={c['draft_max']} draft_min=0 p_min=0 ngl={c['ngl']} ngld={c['ngl']}"
        )
    else:
        label = f"{c['pair']}-target baseline ngl={c['ngl']}"
    return MACHINE + "|" + json.dumps(key, sort_keys=True) + "|" + ",".join(PROMPTS), label


def write_history(db: Path, n_runs: int, n_cells: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    db.unlink(missing_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA + f"PRAGMA user_version = {SCHEMA_VERSION};")
    all_cells = cells(n_cells)
    ids = [cell_id(c) for c in all_cells]
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for r in range(n_runs):
        started = (t0 + timedelta(hours=6 * r)).isoformat(timespec="seconds")
        run_id = f"{started[:10].replace('-', '')}-{r:04d}-ci"
        key = f"{run_id}@{started}"
        commit = f"{(r // 10) * 7919 + 0x1234567:010x}abcdef"
        drift = 1 + 0.03 * rng.gauss(0, 1)  # the machine's speed that run
        # what its speed sentinel saw: one run in 40 ran through a slow phase and warned
        moved = (0.3, 1) if r % 40 == 17 else (abs(drift - 1), 0)
        conn.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                run_id,
                started,
                started,
                f"/nowhere/results/{run_id}",
                commit,
                MACHINE,
                "",
                "2",
                "0.1.0",
                *moved,
            ),
        )
        rows = []
        base_rep = {}
        for c, (cid, label) in zip(all_cells, ids, strict=True):
            slow = 0.92 if (c["pair"] == "smol" and c["role"] == "speculative" and r >= 0.6 * n_runs) else 1.0
            for prompt in PROMPTS:
                reps = [c["tps"] * drift * slow * (1 + 0.02 * rng.gauss(0, 1)) for _ in range(3)]
                if c["role"] == "baseline":
                    base_rep[(c["pair"], c["ngl"], prompt)] = reps
                    rows.append(
                        (
                            key,
                            "baseline_tps",
                            cid,
                            label,
                            ",".join(PROMPTS),
                            prompt,
                            "[0,1,2]",
                            json.dumps(reps),
                        )
                    )
                    continue
                base = base_rep[(c["pair"], c["ngl"], prompt)]
                acc = [min(1.0, 0.9 - 0.02 * c["draft_max"] + 0.01 * rng.gauss(0, 1)) for _ in range(3)]
                for metric, vals in (
                    ("spec_tps", reps),
                    ("speedup", [s / b for s, b in zip(reps, base, strict=True)]),
                    ("acceptance", acc),
                ):
                    rows.append(
                        (key, metric, cid, label, ",".join(PROMPTS), prompt, "[0,1,2]", json.dumps(vals))
                    )
        conn.executemany("INSERT INTO cells VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--cells", type=int, default=50)
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench-publish"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    db = args.out / "history.sqlite"
    t = time.perf_counter()
    write_history(db, args.runs, args.cells)
    print(
        f"history: {db} ({args.runs} runs x {args.cells} cells, {db.stat().st_size / 1e6:.1f} MB, "
        f"written in {time.perf_counter() - t:.1f} s)"
    )
    empty = args.out / "no-runs"
    empty.mkdir(exist_ok=True)
    exe = Path(sys.executable).parent / "specbench"
    t, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [str(exe), "publish", "--db", str(db), "--runs", str(empty), "--out", str(args.out / "site")],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").is_file() else "?"
    print(done.stdout.strip() or done.stderr.strip())
    index = (args.out / "site" / "index.html").stat().st_size if done.returncode == 0 else 0
    ok = done.returncode == 0 and wall < 30 and index < 2e6
    pages = sorted((args.out / "site" / "trend").glob("*.html"))
    biggest = max((p.stat().st_size for p in pages), default=0)
    print(
        f"cpu {cpu:.1f} s (user + system of the publish process), load average {load} on "
        f"{os.cpu_count()} cores; largest trend page {biggest / 1e6:.1f} MB"
    )
    print(
        f"publish: exit {done.returncode}, {wall:.1f} s wall (goal < 30 s), index {index / 1e3:.0f} kB "
        f"(goal < 2 MB): {'MET' if ok else 'NOT MET'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

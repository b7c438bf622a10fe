"""How precise the quickstart's numbers are at a fixed 3 repetitions vs ``repetitions: auto``.

    .venv/bin/python benchmarks/bench_precision.py [--config configs/quickstart.yaml]
        [--precision 0.03] [--out results/bench-precision] [--set KEY=VALUE ...]

Runs the config twice with ``specbench run`` (``repetitions=3``, then ``repetitions=auto`` at
``--precision``; extra ``--set`` options go to both), reads both reports, and prints per cell the
relative 95% CI half-width of the speculative and baseline mean t/s, the repetitions each cell
needed and whether auto met the precision, plus both runs' wall time. Writes the same as JSON to
OUT/bench-precision.json. The numbers are only as quiet as the machine: the manifests' ``noise``
record says how busy it was.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def specbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specbench", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def run(config: str, out: Path, sets: list[str]) -> tuple[list[dict], float, list[str]]:
    """Run once; its report rows (overall), wall seconds and the noise check's busy reasons."""
    args = ["run", config, "--out", str(out), "--quiet"] + [a for s in sets for a in ("--set", s)]
    t0 = time.monotonic()
    res = specbench(*args)
    wall = time.monotonic() - t0
    if res.returncode != 0:
        sys.exit(f"specbench {' '.join(args)} failed:\n{res.stderr[-2000:]}")
    report = specbench("report", str(out), "--format", "json")
    if report.returncode != 0:
        sys.exit(f"specbench report {out} failed:\n{report.stderr[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    return json.loads(report.stdout), wall, manifest.get("noise", {}).get("busy", [])


def reps(row: dict, prompts: int) -> float:
    return row["n"] / prompts if prompts else 0.0


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/quickstart.yaml")
    ap.add_argument("--precision", default="0.03")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench-precision")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    fixed_rows, fixed_wall, fixed_busy = run(a.config, a.out / f"{stamp}-fixed3", [*a.sets, "repetitions=3"])
    auto_sets = [*a.sets, "repetitions=auto", f"precision={a.precision}"]
    auto_rows, auto_wall, auto_busy = run(a.config, a.out / f"{stamp}-auto", auto_sets)
    prompts = len({s["prompt_id"] for s in _samples(a.out / f"{stamp}-fixed3")})
    cells = []
    for f, r in zip(fixed_rows, auto_rows, strict=True):
        label = f"{f['pair']} {f['method']}" + (f" {f['draft_max']}" if f["draft_max"] is not None else "")
        cells.append(
            {
                "cell": label,
                "fixed3_spec_rel_ci": f["spec_tps_rel_ci"],
                "fixed3_baseline_rel_ci": f["baseline_tps_rel_ci"],
                "auto_spec_rel_ci": r["spec_tps_rel_ci"], "auto_baseline_rel_ci": r["baseline_tps_rel_ci"],
                "auto_repetitions": reps(r, prompts), "auto_precision_met": r["precision_met"],
                "fixed3_speedup": f["speedup"], "auto_speedup": r["speedup"],
            }
        )  # fmt: skip
    print(f"{'cell':<24} {'3 reps: spec / base CI':>24} {'auto: spec / base CI':>22} {'reps':>5} {'met':>5}")
    for c in cells:
        fixed = f"±{pct(c['fixed3_spec_rel_ci'])} / ±{pct(c['fixed3_baseline_rel_ci'])}"
        auto = f"±{pct(c['auto_spec_rel_ci'])} / ±{pct(c['auto_baseline_rel_ci'])}"
        met, n = str(c["auto_precision_met"]), c["auto_repetitions"]
        print(f"{c['cell']:<24} {fixed:>24} {auto:>22} {n:>5.1f} {met:>5}")
    print(f"wall: fixed 3 repetitions {fixed_wall:.0f} s, auto {auto_wall:.0f} s")
    for name, busy in (("fixed", fixed_busy), ("auto", auto_busy)):
        for reason in busy:
            print(f"busy during the {name} run: {reason}")
    result = {
        "config": a.config, "precision": float(a.precision), "sets": a.sets, "prompts": prompts,
        "wall_s": {"fixed3": fixed_wall, "auto": auto_wall},
        "busy": {"fixed3": fixed_busy, "auto": auto_busy},
        "cells": cells,
    }  # fmt: skip
    path = a.out / "bench-precision.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")


def _samples(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines() if line.strip()]


if __name__ == "__main__":
    main()

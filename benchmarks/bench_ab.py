"""Does the paired gate of ``specbench ab`` do what issue 21 asks, on this machine?

    .venv/bin/python benchmarks/bench_ab.py [--config configs/ci.yaml] [--out results/bench-ab]
        [--aa-runs 5] [--slow-runs 10] [--delay-frac 0.05] [--threshold 2%]
        [--bisect-commits 8] [--slow-commit 5] [--parts aa,slow,bisect] [--delay-us N] [--tiny]
        [--where decode,entry] [--bisect-where decode|entry] [--set KEY=VALUE ...]

Four measurements, each with ``specbench`` as a user runs it, with ``repetitions=auto`` (rounds
until the paired gate decides, up to the config's ``max_repetitions``; ``--set`` options go to
every run and come after it):

1. **A/A**: ``ab`` of the pinned tree against itself (two labels, one build), ``--aa-runs`` times;
   counts the decisions (4 metrics x cells a run) that fail and that stay undecided.
2. **A real slowdown**: a git history of the pinned tree whose second commit sleeps
   ``--delay-frac`` of a decode step (measured in the A/A runs' baselines) per decode step;
   ``ab`` of commit 0 vs commit 1, ``--slow-runs`` times: how many ``baseline_tps`` decisions
   fail, and each decision's wall time once both builds exist. Two places (``--where``): ``decode``,
   inside the span llama.cpp times as ``eval time``; ``entry``, at the start of ``llama_process``
   (the public decode entry), before that timer starts: only a metric timed over the whole
   generation span (``baseline_tps`` and ``spec_tps`` since run folder format 2, docs/timing.md)
   sees it, ``baseline_decode_tps`` (llama.cpp's own rate) does not. The table shows both.
3. **The same pairs through two-run ``compare``**: each A/A and slowdown run split into its two
   builds' samples, compared as two separate runs (Welch per prompt): false alarms, detections and
   too-noisy rates side by side with the paired gate's.
4. **bisect** on a ``--bisect-commits`` history whose commit ``--slow-commit`` adds the delay:
   the steps it took, whether it named that commit, and every build's time against the first's
   (in a SPECBENCH_HOME with an empty build cache, models and sources shared with yours, so the
   first build compiles everything).

Prints a table and writes everything to OUT/bench-ab.json. ``--tiny`` proves the script works in
a few minutes (16 tokens, 1 run each, a 4-commit bisect): its numbers mean nothing. The real
numbers need a quiet machine: nothing else running (the manifests' ``noise`` record says).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def specbench(
    *args: str, timeout: float = 3600, home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``specbench ARGS``; ``home``: its SPECBENCH_HOME (default the user's)."""
    env = dict(os.environ, SPECBENCH_HOME=str(home)) if home else None
    return subprocess.run(
        [sys.executable, "-m", "specbench", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
        check=False, timeout=timeout, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip


def empty_build_cache(where: Path) -> Path:
    """A SPECBENCH_HOME with no build and no work area, sharing the user's models and sources: the
    first build of a bisect there compiles everything, so later builds can be timed against it."""
    from specbench.base import paths

    where.mkdir(parents=True, exist_ok=True)
    for name, target in (("models", paths.models_dir()), ("sources", paths.sources_dir())):
        target.mkdir(parents=True, exist_ok=True)
        (where / name).symlink_to(target, target_is_directory=True)
    return where


def repeated(flag: str, values: list[str]) -> list[str]:
    """``flag`` before each value: a repeatable option's arguments."""
    return [a for v in values for a in (flag, v)]


def ab(
    config: str,
    base: str,
    head: str,
    out: Path,
    sets: list[str],
    threshold: str,
    metrics: list[str] | None = None,
    budget: str | None = None,
) -> tuple[dict, float]:
    """One ``ab`` run; its JSON and wall seconds. Exit 0/1/3 are answers; anything else stops the bench.
    ``metrics``: the ones ``ab`` decides (and adds rounds for); default all. ``budget``: ``--budget``."""
    t0 = time.monotonic()
    res = specbench("ab", config, "--base", base, "--head", head, "--out", out, "--format", "json", "--quiet",
                    "--threshold", threshold, *repeated("--set", sets),
                    *repeated("--metric", metrics or []),
                    *(["--budget", budget] if budget else []))  # fmt: skip
    wall = time.monotonic() - t0
    if res.returncode not in (0, 1, 3):
        sys.exit(f"specbench ab {base} {head} failed (exit {res.returncode}):\n{res.stderr[-3000:]}")
    return json.loads(res.stdout), wall


def split_run(run: Path, dest: Path) -> tuple[Path, Path]:
    """The two builds' samples of one ab run as two single-build run folders (for two-run compare)."""
    from specbench.results.manifestfile import load_manifest, save_manifest
    from specbench.results.samplelog import append_sample, load_samples

    manifest, samples = load_manifest(run), load_samples(run)
    out = []
    for label in ("base", "head"):
        d = dest / f"{run.name}-{label}"
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        m = manifest.model_copy(update={"run_id": d.name})
        save_manifest(d, m)
        for s in samples:
            if getattr(s, "build", None) == label:
                append_sample(d, s.model_copy(update={"build": None, "run_id": d.name}))
        out.append(d)
    return out[0], out[1]


def two_run(run: Path, dest: Path, threshold: str) -> list[dict]:
    """Today's two-run gate on the same samples: one row per (metric, cell) with its status."""
    a, b = split_run(run, dest)
    res = specbench("compare", a, b, "--format", "json", "--threshold", threshold,
                    "--metric", "baseline_tps", "--metric", "spec_tps")  # fmt: skip
    if res.returncode not in (0, 1, 3, 4):
        sys.exit(f"specbench compare {a} {b} failed (exit {res.returncode}):\n{res.stderr[-3000:]}")
    data = json.loads(res.stdout)
    return [{"metric": m["metric"], "status": c["status"]} for m in data["metrics"] for c in m["cells"]]


def rates(rows: list[dict], metric: str | None = None, key: str = "decision") -> dict:
    rows = [r for r in rows if metric is None or r["metric"] == metric]
    n = len(rows)
    count = {
        w: sum(r[key] == w for r in rows)
        for w in ("fail", "pass", "improved", "undecided", "too_noisy", "warn")
    }
    return {"n": n, **{k: v for k, v in count.items() if v}}


def baseline_step_ms(run: Path) -> float:
    """The median decode step of the pinned build's baseline samples (ms per token)."""
    from specbench.results.samplelog import load_samples

    tps = [s.tps for s in load_samples(run) if s.role == "baseline" and s.valid and s.tps]
    if not tps:
        sys.exit(f"{run}: no valid baseline sample to size the delay with")
    return 1000.0 / statistics.median(tps)


def step_in_pairing(config: str, tree: str, out: Path, sets: list[str]) -> float:
    """The pinned build's decode step (ms) as ``ab`` and ``bisect`` measure it, quiet: the config's
    pairing (duet: one thread a side) changes it, so a delay sized from a whole-machine ``run`` is
    the wrong fraction of the step those commands time. An A/A of 2 repetitions, baselines judged."""
    fixed = [*sets, "repetitions=2", "min_repetitions=2", "max_repetitions=2"]
    ab(config, tree, tree, out, fixed, "5%", ["baseline_tps"])
    return baseline_step_ms(out)


def build_times(out: Path) -> list[float]:
    """Seconds each distinct build of a bisect took, in the order the steps used them (their build.json)."""
    seen: dict[str, float] = {}
    for run in sorted(out.glob("step-*"), key=lambda p: int(p.name.split("-")[1])):
        try:
            manifest = json.loads((run / "manifest.json").read_text())
        except (OSError, ValueError):
            continue
        for b in (manifest.get("builds") or {}).values():
            key = b.get("build_dir") or b.get("commit") or json.dumps(b.get("ref"))
            if key not in seen and b.get("build_s") is not None:
                seen[key] = float(b["build_s"])
    return list(seen.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/ci.yaml")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench-ab")
    ap.add_argument("--aa-runs", type=int, default=5)
    ap.add_argument("--slow-runs", type=int, default=10)
    ap.add_argument("--delay-frac", type=float, default=0.05)
    ap.add_argument("--threshold", default="2%")
    ap.add_argument("--bisect-commits", type=int, default=8)
    ap.add_argument("--slow-commit", type=int, default=5)
    ap.add_argument("--parts", default="aa,slow,bisect", help="which measurements, comma-separated")
    ap.add_argument(
        "--slow-metric", action="append", default=None, metavar="METRIC",
        help="what the slowdown runs decide (ab --metric; repeatable; default baseline_tps and spec_tps: "
        "a slower generation step must show on both sides, wherever the delay is)",
    )  # fmt: skip
    ap.add_argument(
        "--delay-us", type=int, help="the slow commit's delay (default: --delay-frac of the A/A step)"
    )
    ap.add_argument("--where", default="decode,entry", help="where the slow commit sleeps: decode, entry")
    ap.add_argument("--bisect-where", default="decode", choices=("decode", "entry"))
    ap.add_argument("--tiny", action="store_true", help="prove the script works; numbers mean nothing")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    args.slow_metric = args.slow_metric or ["baseline_tps", "spec_tps"]
    from tests.fixtures.llama_history import pinned_tree

    # Rounds until the paired gate decides (6 pairs, ci.yaml's 2 prompts x 3 repetitions, give an
    # interval as wide as the spread of 6 values: too wide for a 5% effect on 2 CPU cores).
    sets = ["repetitions=auto", *args.sets]
    if args.tiny:
        sets = ["generation.n_predict=16", "repetitions=3", "warmup=0", *args.sets]
        args.aa_runs, args.slow_runs, args.bisect_commits = 1, 1, 4
        args.slow_commit = min(args.slow_commit, 2)
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    tree = str(pinned_tree())
    result: dict = {"config": args.config, "sets": sets, "threshold": args.threshold}

    parts = set(args.parts.split(","))
    if "aa" not in parts and args.delay_us is None and parts & {"slow", "bisect"}:
        sys.exit(
            "--parts without aa needs --delay-us (the A/A runs measure the decode step it is sized from)"
        )
    delay_us = args.delay_us

    # 1. A/A
    aa, aa_two = [], []
    for i in range(args.aa_runs if "aa" in parts else 0):
        run = args.out / f"aa-{i}"
        data, wall = ab(args.config, tree, tree, run, sets, args.threshold)
        aa += [dict(d, wall_s=wall) for d in data["decisions"]]
        aa_two += two_run(run, args.out / "split", args.threshold)
        print(
            f"A/A {i + 1}/{args.aa_runs}: {[d['decision'] for d in data['decisions']]} ({wall:.0f} s)",
            flush=True,
        )
    if "aa" in parts:
        step_ms = baseline_step_ms(args.out / "aa-0")
        delay_us = delay_us or max(1, round(args.delay_frac * step_ms * 1000))
        result["aa"] = {
            "paired": rates(aa),
            "two_run": rates(aa_two, key="status"),
            "decode_step_ms": step_ms,
        }
    if "slow" in parts:
        result["slow"] = {w: slowdown(args, tree, delay_us, sets, w) for w in args.where.split(",")}
    if "bisect" in parts:
        result["bisect"] = bisect(args, tree, delay_us, sets)
    (args.out / "bench-ab.json").write_text(json.dumps(result, indent=2))
    show(result, args, delay_us)


def slowdown(args, tree: str, delay_us: int, sets: list[str], where: str) -> dict:
    """ab of a commit with ``delay_us`` per decode step (at ``where``) against its parent, and the
    same pairs through two-run compare."""
    from tests.fixtures.llama_history import make_history

    hist = make_history(args.out / f"history-slow-{where}" / "llama.cpp", Path(tree), [0, delay_us], where)
    base, head = f"{hist.repo}@{hist.shas[0]}", f"{hist.repo}@{hist.shas[1]}"
    for sha in hist.shas:  # both builds exist before the first timed decision
        res = specbench("build", "--source", hist.repo, "--ref", sha, timeout=7200)
        if res.returncode:
            sys.exit(f"specbench build --ref {sha} failed (exit {res.returncode}):\n{res.stderr[-3000:]}")
    slow, slow_two, walls, decode_ratios = [], [], [], []
    for i in range(args.slow_runs):
        run = args.out / f"slow-{where}-{i}"
        data, wall = ab(args.config, base, head, run, sets, args.threshold, args.slow_metric)
        slow += data["decisions"]
        walls.append(wall)
        slow_two += two_run(run, args.out / "split", args.threshold)
        decided = data["decisions"]
        shown = {m: [(round(d["ratio"] or 0, 3), d["decision"]) for d in decided if d["metric"] == m]
                 for m in ("baseline_tps", "spec_tps")}  # fmt: skip
        decode_only = decode_only_ratio(run)
        print(f"slow ({where}) {i + 1}/{args.slow_runs}: {shown}, baseline_decode_tps head/base "
              f"{decode_only:.3f} ({wall:.0f} s)", flush=True)  # fmt: skip
        decode_ratios.append(decode_only)
    return {
        "where": where, "delay_us": delay_us, "paired_baseline_tps": rates(slow, "baseline_tps"),
        "paired_spec_tps": rates(slow, "spec_tps"), "baseline_decode_tps_ratio": decode_ratios,
        "paired_all": rates(slow), "two_run_baseline_tps": rates(slow_two, "baseline_tps", key="status"),
        "wall_s_after_builds": walls,
    }  # fmt: skip


def decode_only_ratio(run: Path) -> float:
    """head/base of the median ``baseline_decode_tps`` (llama.cpp's eval-time rate) of one ab run."""
    from specbench.results.samplelog import load_samples

    by_build: dict[str, list[float]] = {}
    for s in load_samples(run):
        if s.role == "baseline" and s.valid and s.decode_tps:
            by_build.setdefault(s.build or "", []).append(s.decode_tps)
    if not by_build.get("head") or not by_build.get("base"):
        return float("nan")
    return statistics.median(by_build["head"]) / statistics.median(by_build["base"])


def bisect(args, tree: str, delay_us: int, sets: list[str]) -> dict:
    """bisect on a history whose commit ``--slow-commit`` adds the delay: steps, answer, build times."""
    from tests.fixtures.llama_history import make_history

    delays = [0] * args.bisect_commits
    for i in range(args.slow_commit, args.bisect_commits):
        delays[i] = delay_us
    bhist = make_history(args.out / "history-bisect" / "llama.cpp", Path(tree), delays, args.bisect_where)
    bout = args.out / "bisect"
    t0 = time.monotonic()
    good, bad = bhist.shas[0], bhist.shas[-1]
    home = empty_build_cache(args.out / "bisect-home")  # the first build compiles everything
    res = specbench("bisect", args.config, "--source", bhist.repo, "--good", good, "--bad", bad,
                    "--metric", "baseline_tps", "--threshold", args.threshold, "--out", bout, "--quiet",
                    *repeated("--set", sets), timeout=4 * 3600, home=home)  # fmt: skip
    state = json.loads((bout / "bisect.json").read_text()) if (bout / "bisect.json").is_file() else {}
    named = next(
        (ln.split()[3] for ln in res.stdout.splitlines() if ln.startswith("first bad commit:")), None
    )
    if res.returncode not in (0, 3):
        print(res.stderr[-3000:], file=sys.stderr)
    return {
        "exit": res.returncode, "steps": len(state.get("steps", [])), "named": named,
        "expected": bhist.shas[args.slow_commit], "correct": named == bhist.shas[args.slow_commit],
        "wall_s": time.monotonic() - t0, "build_s": build_times(bout), "output": res.stdout[-3000:],
    }  # fmt: skip


def show(r: dict, args, delay_us: int | None) -> None:
    print()
    print("| measurement | paired `ab` | two-run `compare` |")
    print("| --- | --- | --- |")
    if "aa" in r:
        print(f"| A/A: decisions, fail / undecided | {r['aa']['paired']} | {r['aa']['two_run']} |")
    for where, slow in r.get("slow", {}).items():
        place = "in decode's timer" if where == "decode" else "at llama_process entry, outside eval time"
        ratios = [x for x in slow["baseline_decode_tps_ratio"] if x == x]
        print(f"| +{delay_us} us/step {place}: baseline_tps | {slow['paired_baseline_tps']} | "
              f"{slow['two_run_baseline_tps']} |")  # fmt: skip
        print(f"| the same runs: spec_tps | {slow['paired_spec_tps']} | - |")
        if ratios:
            print(f"| the same runs: baseline_decode_tps head/base (median) | "
                  f"{statistics.median(ratios):.3f} | - |")  # fmt: skip
        if slow["wall_s_after_builds"]:
            print(f"| ab wall time once built (max) | {max(slow['wall_s_after_builds']):.0f} s | - |")
    if "bisect" in r:
        b = r["bisect"]
        found = f"{b['steps']} steps, named the slow commit: {b['correct']}"
        print(f"| bisect, {args.bisect_commits} commits | {found} | - |")
        if b["build_s"]:
            first, rest = b["build_s"][0], b["build_s"][1:]
            print(
                f"| bisect builds after the first / first | {max(rest, default=0) / first:.0%} at most | - |"
            )
    print(f"\n{args.out / 'bench-ab.json'}")


if __name__ == "__main__":
    main()

"""Does ``specbench bisect`` with a config's fixed repetitions name the slow commit every time (issue 32)?

    .venv/bin/python benchmarks/bench_decide.py [--config configs/ci.yaml] [--out results/bench-decide]
        [--tries 5] [--commits 8] [--slow-commit 5] [--delay-frac 0.05] [--delay-us N]
        [--threshold 2%] [--metric baseline_tps] [--budget SECONDS] [--set KEY=VALUE ...]

Builds a ``--commits`` git history of the pinned llama.cpp tree (``tests/fixtures/llama_history``)
whose commit ``--slow-commit`` and every later one spin ``--delay-us`` per decode step (default:
``--delay-frac`` of the decode step a quiet 2-repetition ``ab`` of the config measures now, in the
pairing ``bisect`` uses: duet halves the threads, which lengthens the step), then runs
``specbench bisect CONFIG --metric METRIC --threshold T`` on it ``--tries`` times, each into a
fresh ``--out`` (the builds come from the build cache after the first try). The config is used as
it is (no ``--set`` unless given): with ``configs/ci.yaml`` that is 3 fixed repetitions, which
``bisect`` now takes as its first round. Prints one line per try (exit, named commit, each step's
decision, ratio, pairs and wall time) and writes OUT/bench-decide.json.

``--threshold 2%`` as in ``bench_ab.py``: a 5% longer decode step is a 4.8% lower t/s, inside a 5%
threshold, which would rightly not fail it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_ab import repeated, specbench, step_in_pairing  # noqa: E402


def step_pairs(run_dir: Path, metric: str) -> int | None:
    """Pairs the step's gate judged: head's valid samples of the metric's role (one per pair)."""
    from specbench.results.folder import has_samples
    from specbench.results.samplelog import load_samples

    if not has_samples(run_dir):
        return None
    role = "baseline" if metric == "baseline_tps" else "speculative"
    return sum(s.role == role and s.build == "head" and s.valid for s in load_samples(run_dir))


def one_try(args, repo: Path, good: str, bad: str, out: Path) -> dict:
    t0 = time.monotonic()
    budget = ["--budget", args.budget] if args.budget else []
    res = specbench("bisect", args.config, "--source", repo, "--good", good, "--bad", bad, "--metric",
                    args.metric, "--threshold", args.threshold, "--out", out, "--quiet", *budget,
                    *repeated("--set", args.sets), timeout=6 * 3600)  # fmt: skip
    wall = time.monotonic() - t0
    state = json.loads((out / "bisect.json").read_text()) if (out / "bisect.json").is_file() else {}
    named = next(
        (ln.split()[3] for ln in res.stdout.splitlines() if ln.startswith("first bad commit:")), None
    )
    steps = [
        {
            "commit": s["commit"][:10],
            "status": s["status"],
            "ratio": s["ratio"],
            "ci": [s["ci_low"], s["ci_high"]],
            "pairs": step_pairs(Path(s["run_dir"]), args.metric),
        }  # fmt: skip
        for s in state.get("steps", [])
    ]
    if res.returncode not in (0, 3):
        print(res.stdout[-2000:], res.stderr[-3000:], file=sys.stderr)
    return {
        "exit": res.returncode,
        "named": named,
        "steps": steps,
        "wall_s": wall,
        "output": res.stdout[-4000:],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/ci.yaml")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench-decide")
    ap.add_argument("--tries", type=int, default=5)
    ap.add_argument("--commits", type=int, default=8)
    ap.add_argument("--slow-commit", type=int, default=5)
    ap.add_argument("--delay-frac", type=float, default=0.05)
    ap.add_argument("--delay-us", type=int)
    ap.add_argument("--threshold", default="2%")
    ap.add_argument("--metric", default="baseline_tps")
    ap.add_argument("--budget", help="bisect --budget (per step); default none")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    from tests.fixtures.llama_history import make_history, pinned_tree

    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    step_ms = None
    if args.delay_us is None:
        step_ms = step_in_pairing(args.config, str(pinned_tree()), args.out / "sizing", args.sets)
        args.delay_us = max(1, round(args.delay_frac * step_ms * 1000))
    delays = [0 if i < args.slow_commit else args.delay_us for i in range(args.commits)]
    # a spin, not a sleep: a sleeping vCPU here wakes late, which doubled the slowdown asked for
    hist = make_history(args.out / "history" / "llama.cpp", pinned_tree(), delays, busy=True)
    expected = hist.shas[args.slow_commit]
    sized = f" ({args.delay_frac:.0%} of {step_ms:.2f} ms measured now)" if step_ms else ""
    print(f"delay {args.delay_us} us per decode step{sized}; slow commit {expected[:10]} "
          f"({args.slow_commit} of 0-{args.commits - 1})", flush=True)  # fmt: skip
    tries = []
    for i in range(args.tries):
        r = one_try(args, hist.repo, hist.shas[0], hist.shas[-1], args.out / f"try-{i + 1}")
        r["correct"] = r["named"] == expected
        tries.append(r)
        shown = ", ".join(
            f"{s['commit']} {s['status']} {s['ratio']:.3f} ({s['pairs']} pairs)" if s["ratio"] is not None
            else f"{s['commit']} {s['status']}"
            for s in r["steps"]
        )  # fmt: skip
        print(f"try {i + 1}/{args.tries}: exit {r['exit']}, named the slow commit: {r['correct']}; "
              f"steps: {shown}; {r['wall_s']:.0f} s", flush=True)  # fmt: skip
        (args.out / "bench-decide.json").write_text(json.dumps({
            "config": args.config, "sets": args.sets, "threshold": args.threshold, "metric": args.metric,
            "budget": args.budget, "delay_us": args.delay_us, "step_ms": step_ms, "commits": args.commits,
            "slow_commit": args.slow_commit, "expected": expected, "tries": tries,
        }, indent=2))  # fmt: skip
    print(f"\nnamed the slow commit in {sum(t['correct'] for t in tries)} of {len(tries)} tries "
          f"({args.out / 'bench-decide.json'})")  # fmt: skip


if __name__ == "__main__":
    main()

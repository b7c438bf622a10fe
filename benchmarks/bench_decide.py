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
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_ab import repeated, step_in_pairing  # noqa: E402


def step_pairs(run_dir: Path, metric: str) -> int | None:
    """Pairs the step's gate judged: head's valid samples of the metric's role (one per pair)."""
    from specbench.results.folder import has_samples
    from specbench.results.samplelog import load_samples

    if not has_samples(run_dir):
        return None
    role = "baseline" if metric == "baseline_tps" else "speculative"
    return sum(s.role == role and s.build == "head" and s.valid for s in load_samples(run_dir))


def judged(run: dict, metric: str) -> dict:
    """A step's run (against good, or against bad) as bisect.json has it, with its pairs counted."""
    pairs = step_pairs(Path(run["run_dir"]), metric)
    ci = [run["ci_low"], run["ci_high"]]
    return {"status": run["status"], "ratio": run["ratio"], "ci": ci, "pairs": pairs}


def timed_lines(args: list[str], timeout: float) -> tuple[int, list[tuple[float, str]]]:
    """``specbench ARGS`` with each stdout line stamped (seconds since the start): a bisect prints
    a line as each step ends, so the stamps give each step's wall time, preparation included."""
    t0 = time.monotonic()
    lines: list[tuple[float, str]] = []
    cmd = [sys.executable, "-m", "specbench", *map(str, args)]
    quiet = {"stderr": subprocess.DEVNULL, "stdin": subprocess.DEVNULL}
    with subprocess.Popen(cmd, cwd=ROOT, text=True, stdout=subprocess.PIPE, **quiet) as proc:
        for line in proc.stdout:
            lines.append((time.monotonic() - t0, line.rstrip("\n")))
        rc = proc.wait(timeout=timeout)
    return rc, lines


def one_try(args, repo: Path, good: str, bad: str, out: Path) -> dict:
    t0 = time.monotonic()
    budget = ["--budget", args.budget] if args.budget else []
    rc, lines = timed_lines(["bisect", args.config, "--source", repo, "--good", good, "--bad", bad,
                             "--metric", args.metric, "--threshold", args.threshold, "--out", out, "--quiet",
                             *budget, *repeated("--set", args.sets)], timeout=6 * 3600)  # fmt: skip
    wall = time.monotonic() - t0
    stdout = "\n".join(line for _, line in lines)
    state = json.loads((out / "bisect.json").read_text()) if (out / "bisect.json").is_file() else {}
    named = next((ln.split()[3] for _, ln in lines if ln.startswith("first bad commit:")), None)
    ends = [0.0, *(t for t, ln in lines if ln.startswith("step "))]
    steps = []
    for i, s in enumerate(state.get("steps", [])):
        vs = s.get("against_bad")
        steps.append({
            **judged(s, args.metric), "commit": s["commit"][:10],
            "against_bad": vs and judged(vs, args.metric),
            "wall_s": ends[i + 1] - ends[i] if i + 1 < len(ends) else None,
        })  # fmt: skip
    if rc not in (0, 3):
        print(stdout[-3000:], file=sys.stderr)
    return {"exit": rc, "named": named, "steps": steps, "wall_s": wall, "output": stdout[-4000:]}


def shown(step: dict) -> str:
    """One step as the try's line shows it: against good, then against bad if it was measured."""

    def part(s: dict) -> str:
        return s["status"] if s["ratio"] is None else f"{s['status']} {s['ratio']:.3f} ({s['pairs']} pairs)"

    text = f"{step['commit']} {part(step)}"
    if step.get("against_bad"):
        text += f" / vs bad {part(step['against_bad'])}"
    return text + (f" {step['wall_s']:.0f} s" if step.get("wall_s") is not None else "")


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
        steps = ", ".join(shown(s) for s in r["steps"])
        print(f"try {i + 1}/{args.tries}: exit {r['exit']}, named the slow commit: {r['correct']}; "
              f"steps: {steps}; {r['wall_s']:.0f} s", flush=True)  # fmt: skip
        (args.out / "bench-decide.json").write_text(json.dumps({
            "config": args.config, "sets": args.sets, "threshold": args.threshold, "metric": args.metric,
            "budget": args.budget, "delay_us": args.delay_us, "step_ms": step_ms, "commits": args.commits,
            "slow_commit": args.slow_commit, "expected": expected, "tries": tries,
        }, indent=2))  # fmt: skip
    print(f"\nnamed the slow commit in {sum(t['correct'] for t in tries)} of {len(tries)} tries "
          f"({args.out / 'bench-decide.json'})")  # fmt: skip


if __name__ == "__main__":
    main()

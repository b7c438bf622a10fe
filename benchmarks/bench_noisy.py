"""Does ``specbench ab`` decide right while something else competes for the CPU (issue 44)?

    .venv/bin/python benchmarks/bench_noisy.py [--config configs/ci.yaml] [--out results/bench-noisy]
        [--tries 10] [--parts aa,slow] [--budget 10m] [--threshold 5%] [--metric METRIC ...]
        [--noise noisy|quiet] [--duty 0.3] [--burst 1-5] [--delay-frac 0.05] [--delay-us N] [--check-reps N]
        [--set KEY=VALUE ...]
    .venv/bin/python benchmarks/bench_noisy.py --tally OUT1/bench-noisy.json OUT2/bench-noisy.json

With specbench's noise generator running (``benchmarks/noisegen.py``: one thread busy ``--duty``
of the time in random ``--burst`` second bursts, started before each ``ab`` and stopped after it):

1. ``aa``: ``ab CONFIG --budget B`` of the pinned tree against itself, ``--tries`` times: every
   exit 0 (pass) is right, exit 1 (a fail) a false alarm, exit 3 undecided.
2. ``slow``: ``ab`` of a commit whose every decode step sleeps ``--delay-us`` (default
   ``--delay-frac`` of the decode step the config's pairing measures, quiet, before the noise
   starts: ``ab`` with 2 repetitions; a spin, as real work) against its parent (``--check-reps N``:
   first a quiet ``ab`` of N repetitions says what slowdown the build really gives),
   ``--tries`` times: exit 1 is right.

The config is used as it is (its ``pairing``, default auto: duet on CPU builds) unless ``--set``
says otherwise (``--set pairing=sequential`` measures the other kind). Prints one line per try and
the counts, and writes OUT/bench-noisy.json. Needs a quiet machine apart from the generator.
``--tally`` counts the tries of saved files together (one check run in parts: they must agree on
what was measured, the slow build's delay included), with each decision's interval.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_ab import ab, specbench, step_in_pairing  # noqa: E402
from bench_pairs import burst_range  # noqa: E402
from noisegen import NoiseGenerator, NoiseSpec  # noqa: E402

RIGHT = {"aa": 0, "slow": 1}  # the exit each part should give: pass, fail


def one_try(args, part: str, base: str, head: str, out: Path, spec: NoiseSpec | None) -> dict:
    gen = NoiseGenerator(spec) if spec is not None else None
    if gen is not None:
        gen.start()
    try:
        sets = args.sets
        data, wall = ab(args.config, base, head, out, sets, args.threshold, args.metric, budget=args.budget)
    finally:
        duty = None
        if gen is not None:
            gen.stop()
            duty = gen.duty()
    from specbench.results.samplelog import load_samples

    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "part": part, "exit": data.get("exit_code"), "wall_s": round(wall, 1), "duty": duty,
        "pairing": manifest.get("pairing"), "reruns": sum(s.reruns > 0 for s in load_samples(out)),
        "decisions": [{k: d.get(k) for k in ("metric", "cell", "decision", "ratio", "ci_low", "ci_high",
                                              "n_pairs")} for d in data["decisions"]],
    }  # fmt: skip


# what the files --tally counts together must agree on
SAME = ("config", "sets", "threshold", "budget", "noise", "duty", "burst_s", "delay_us")


def try_line(r: dict, label: str, intervals: bool = False) -> str:
    def one(d: dict) -> str:
        if d["ratio"] is None:
            return f"{d['metric']} {d['decision']}"
        ci = f" [{d['ci_low']:.3f}, {d['ci_high']:.3f}]" if intervals and d["ci_low"] is not None else ""
        return f"{d['metric']} {d['decision']} {d['ratio']:.3f}{ci} ({d['n_pairs']})"

    shown = ", ".join(one(d) for d in r["decisions"] if not intervals or d["metric"] != "acceptance")
    duty = f"; noise duty {r['duty']:.0%}" if r["duty"] is not None else ""
    return (f"{label}: exit {r['exit']} ({'right' if r['right'] else 'WRONG'}); {shown}; "
            f"{r['reruns']} re-runs; {r['wall_s']:.0f} s{duty}")  # fmt: skip


def counts(tries: list[dict], parts: list[str]) -> list[str]:
    out = []
    for part in parts:
        got = [t for t in tries if t["part"] == part]
        out.append(f"{part}: right in {sum(t['right'] for t in got)} of {len(got)} tries "
                   f"(exit {RIGHT[part]} expected; exits {[t['exit'] for t in got]})")  # fmt: skip
    return out


def tally(files: list[Path]) -> None:
    """The tries of several saved runs of this benchmark, counted as one check."""
    runs = [json.loads(f.read_text()) for f in files]
    for f, r in zip(files[1:], runs[1:], strict=True):
        differ = [k for k in SAME if r.get(k) != runs[0].get(k)]
        if differ:
            sys.exit(f"{f} measured other things than {files[0]} ({', '.join(differ)} differ): not one check")
    tries = [t for r in runs for t in r["tries"]]
    parts = list(dict.fromkeys(t["part"] for t in tries))
    for part in parts:
        for i, t in enumerate(t for t in tries if t["part"] == part):
            print(try_line(t, f"{part} {i + 1}", intervals=True))
    print("\n".join(counts(tries, parts)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tally", type=Path, nargs="+", metavar="JSON", help="count the tries of saved runs")
    ap.add_argument("--config", default="configs/ci.yaml")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench-noisy")
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--parts", default="aa,slow")
    ap.add_argument("--budget", default="10m")
    ap.add_argument("--threshold", default="5%")
    ap.add_argument("--metric", action="append", default=None, help="ab --metric (default: ab's)")
    ap.add_argument("--noise", choices=("noisy", "quiet"), default="noisy")
    ap.add_argument("--duty", type=float, default=0.3)
    ap.add_argument("--burst", type=burst_range, default=(1.0, 5.0))
    ap.add_argument("--delay-frac", type=float, default=0.05)
    ap.add_argument("--delay-us", type=int)
    ap.add_argument("--check-reps", type=int, default=0, help="a quiet ab of the slow build first (0: none)")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    if args.tally:
        return tally(args.tally)
    from tests.fixtures.llama_history import make_history, pinned_tree

    spec = None
    if args.noise == "noisy":
        spec = NoiseSpec(duty=args.duty, burst_s=args.burst, limit_s=3 * 3600, seed=None)
        spec.check()
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    tree = str(pinned_tree())
    parts = args.parts.split(",")
    result: dict = {"config": args.config, "sets": args.sets, "threshold": args.threshold,
                    "budget": args.budget, "noise": args.noise, "duty": args.duty,
                    "burst_s": list(args.burst), "tries": []}  # fmt: skip
    base = head = tree
    if "slow" in parts:
        step_ms = None
        if args.delay_us is None:  # sized quiet, in the pairing the tries use
            step_ms = step_in_pairing(args.config, tree, args.out / "sizing", args.sets)
            args.delay_us = max(1, round(args.delay_frac * step_ms * 1000))
        # a spin, not a sleep: a sleeping vCPU here wakes late, which doubled the slowdown asked for
        hist = make_history(args.out / "history" / "llama.cpp", Path(tree), [0, args.delay_us], busy=True)
        base, head = f"{hist.repo}@{hist.shas[0]}", f"{hist.repo}@{hist.shas[1]}"
        for sha in hist.shas:  # both builds exist before the first timed try
            res = specbench("build", "--source", hist.repo, "--ref", sha, timeout=7200)
            if res.returncode:
                sys.exit(f"specbench build --ref {sha} failed (exit {res.returncode}):\n{res.stderr[-3000:]}")
        result.update(delay_us=args.delay_us, step_ms=step_ms)
        sized = f" ({args.delay_frac:.0%} of {step_ms:.2f} ms measured now)" if step_ms else ""
        print(f"slow build: {args.delay_us} us of spin per decode step{sized}", flush=True)
        if args.check_reps:  # what the slow build really gives, quiet, before the noisy tries
            sets = [*args.sets, *(f"{k}={args.check_reps}" for k in ("repetitions", "max_repetitions"))]
            data, _ = ab(args.config, base, head, args.out / "check", sets, args.threshold, ["baseline_tps"])
            (d,) = [d for d in data["decisions"] if d["metric"] == "baseline_tps"]
            result["check"] = {k: d.get(k) for k in ("ratio", "ci_low", "ci_high", "n_pairs")}
            print(f"quiet check: baseline_tps {d['ratio']:.3f} [{d['ci_low']:.3f}, {d['ci_high']:.3f}] "
                  f"({d['n_pairs']} pairs)", flush=True)  # fmt: skip
    for i in range(args.tries):  # the parts take turns: a phase of the host falls on each alike
        for part in parts:
            pair = (tree, tree) if part == "aa" else (base, head)
            r = one_try(args, part, *pair, args.out / f"{part}-{i + 1}", spec)
            r["right"] = r["exit"] == RIGHT[part]
            result["tries"].append(r)
            print(try_line(r, f"{part} {i + 1}/{args.tries}"), flush=True)
            (args.out / "bench-noisy.json").write_text(json.dumps(result, indent=1, allow_nan=False) + "\n")
    print("\n".join(counts(result["tries"], parts)))


if __name__ == "__main__":
    main()

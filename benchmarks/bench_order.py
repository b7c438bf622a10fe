"""Does what runs right before a baseline change its t/s? (issue 24: tune's baselines vs a sweep's)

    .venv/bin/python benchmarks/bench_order.py [--config configs/quickstart.yaml] [--pair smol]
                                               [--draft-max 8] [--reps 6] [--set KEY=VALUE]
                                               [--out results/bench-order]

In a sweep, a prompt's baseline runs right after the previous prompt's draft-alone run
(llama-completion on the draft); in tune's rounds (which leave draft-alone runs out) right after a
speculative run, or after llama-bench (the calibration) or tune's own bookkeeping for a round's first
prompt. This measures the baseline of one prompt after each of those, interleaved in a shuffled
order within every repetition (so drift hits every condition alike):

- ``after-spec``: llama-speculative-simple (draft_max --draft-max), then the baseline (tune's order);
- ``after-draft``: the draft alone (llama-completion), then the baseline (a sweep's order);
- ``after-bench``: llama-bench on the target (tune's calibration, 2 repetitions at depth 256);
- ``after-idle``: 3 s of nothing (tune's bookkeeping between rounds).

Prints each condition's baseline t/s (mean and 95% interval) and the ratio to ``after-draft``; writes
OUT/bench_order.json. Timings need a quiet machine: ``--reps 1`` only proves the script runs.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import time
from datetime import datetime
from pathlib import Path

from specbench.base import stats
from specbench.execute import benchmark, preparation
from specbench.execute.process import child_env
from specbench.execute.runner import execute
from specbench.plan.sweep import make_plan
from specbench.results.samplelog import load_samples
from specbench.tune.calibrate import bench_argv
from specbench.tune.search import tune_config

CONDITIONS = ["after-spec", "after-draft", "after-bench", "after-idle"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/quickstart.yaml")
    ap.add_argument("--pair", default="smol")
    ap.add_argument("--draft-max", type=int, default=8)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="config override, e.g. generation.n_predict=16 for a quick try")  # fmt: skip
    ap.add_argument("--out", default=f"results/bench-order-{datetime.now():%Y%m%d-%H%M%S}")
    args = ap.parse_args()
    out = Path(args.out)
    cfg = preparation.load(Path(args.config), [f"sweep.draft_max=[{args.draft_max}]", "warmup=0", *args.sets])
    base = tune_config(cfg, args.pair)
    prepared = preparation.prepare(base)
    full = make_plan(base, prepared.build, prepared.models, prepared.prompts[:1], repetitions=1)
    plan = full.invocations
    baseline = next(i for i in plan if i.role == "baseline")
    spec = next(i for i in plan if i.role == "speculative")
    draft = next(i for i in plan if i.role == "draft")
    target = prepared.models[base.pairs[args.pair].target]
    bench = bench_argv(prepared.build, str(target.path), [1, 2, 5, 9], 256, base.generation.threads, 0, 2)
    manifest = benchmark.make_manifest(prepared, out, ["bench_order.py"])
    rng = random.Random(42)
    for rep in range(args.reps):
        order = CONDITIONS[:]
        rng.shuffle(order)
        for cond in order:
            r = rep * len(CONDITIONS) + CONDITIONS.index(cond)  # the repetition number says the condition
            before = {"after-spec": [spec], "after-draft": [draft]}.get(cond, [])
            if cond == "after-bench":
                env = child_env()
                subprocess.run(bench, capture_output=True, stdin=subprocess.DEVNULL, env=env, check=True)
            elif cond == "after-idle":
                time.sleep(3)
            invs = [i.model_copy(update={"repetition": r}) for i in [*before, baseline]]
            execute(full.only(invs), out, manifest, resume=out.joinpath("samples.jsonl").is_file())
    by_cond: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    for s in load_samples(out):
        if s.role == "baseline" and s.tps is not None:
            by_cond[CONDITIONS[s.repetition % len(CONDITIONS)]].append(s.tps)
    ref = stats.summarize(by_cond["after-draft"]).mean
    result = {}
    print(f"{'condition':<14}{'n':>3}{'baseline t/s':>14}{'95% CI':>18}{'vs after-draft':>16}")
    for cond, values in by_cond.items():
        summ = stats.summarize(values)
        ratio = summ.mean / ref if summ.mean and ref else None
        ci = f"[{summ.ci_low:.1f}, {summ.ci_high:.1f}]" if summ.ci_low is not None else "-"
        print(f"{cond:<14}{len(values):>3}{summ.mean or 0:>14.1f}{ci:>18}{ratio or 0:>16.3f}")
        ci_pair = [summ.ci_low, summ.ci_high]
        result[cond] = {"tps": values, "mean": summ.mean, "ci": ci_pair, "vs_draft": ratio}
    (out / "bench_order.json").write_text(json.dumps(result, indent=2))
    print(f"wrote {out / 'bench_order.json'}")


if __name__ == "__main__":
    main()

"""The speed model against one finished run: does ``model_speedup`` predict its same-span speedups?

    .venv/bin/python benchmarks/bench_model.py RUN [--depth 200] [--reps 1]

Calibrates the run's first pair with llama-bench (``tune.calibrate``, the run's own build, models and
thread count, at KV depth ``--depth``) and prints, for every draft-model cell of the run's report,
the token overhead ``o`` (time per token outside the forward pass, from the same-span
``baseline_tps`` and from llama.cpp's decode-only rate) and the model's speedup against the
measured one, each way. The calibration and the run should see the same machine: run it right
after the run, on a quiet machine (docs/timing.md, "Speed model and tune").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specbench.analysis.cells import cell_name  # noqa: E402
from specbench.analysis.report import build_report  # noqa: E402
from specbench.analysis.speedmodel import model_speedup, token_overhead  # noqa: E402
from specbench.builder.buildinfo import BuildInfo  # noqa: E402
from specbench.tune.calibrate import calibrate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--depth", type=int, default=200)
    ap.add_argument("--reps", type=int, default=1)
    args = ap.parse_args()
    manifest = json.loads((args.run / "manifest.json").read_text())
    build = BuildInfo.load(Path(manifest["build"]["bin_dir"]).parent / "build.json")
    pair = next(iter(manifest["config"]["pairs"].values()))
    target, draft = manifest["models"][pair["target"]], manifest["models"][pair["draft"]]
    rows = [r for r in build_report([args.run]).rows if r.category == "all" and r.method == "draft"]
    max_draft = max((r.draft_max or 1 for r in rows), default=8)
    cal = calibrate(
        build,
        [(target["name"], target["path"], None, 0), (draft["name"], draft["path"], None, 0)],
        max_draft=max_draft, depth=args.depth, threads=manifest["config"]["generation"]["threads"],
        reps=args.reps, timeout_s=1500,
    ).calibration  # fmt: skip
    t, d = cal.costs(target["name"], 0), cal.costs(draft["name"], 0)
    print(f"T(1) {t.decode_s * 1e3:.2f} ms, D(1) {d.decode_s * 1e3:.2f} ms (llama-bench, depth {args.depth})")
    print("| cell | o same-span | o decode-only | model (same-span) | measured (same-span) "
          "| model (decode-only) | measured (decode-only) |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        if not r.tokens_per_pass or not r.baseline_tps or not r.baseline_decode_tps or not r.spec_tps:
            continue
        g = r.draft_max
        new = model_speedup(t, d, g, r.tokens_per_pass, r.baseline_tps)
        old = model_speedup(t, d, g, r.tokens_per_pass, r.baseline_decode_tps)
        print(
            f"| {cell_name(r)} | {token_overhead(t, r.baseline_tps) * 1e3:.2f} ms "
            f"| {token_overhead(t, r.baseline_decode_tps) * 1e3:.2f} ms | {new:.3f}x "
            f"| {r.spec_tps / r.baseline_tps:.3f}x | {old:.3f}x | {r.spec_tps / r.baseline_decode_tps:.3f}x |"
        )


if __name__ == "__main__":
    main()

"""Old and new speedups of a run, per cell: what timing both sides over the same span changed.

    .venv/bin/python benchmarks/bench_span.py [RUN_DIR] [--config configs/quickstart.yaml]
        [--set KEY=VALUE ...]

Without RUN_DIR it runs CONFIG first (``specbench run``, ``--set`` options passed on). For every
cell of the run's report it prints the baseline's llama.cpp decode-only rate (``eval time``, what
``baseline_tps`` was before run folder format 2), the same-span ``baseline_tps`` and ``spec_tps``,
the old speedup (spec over decode-only baseline) and the new one (spec over same-span baseline), both
as a ratio of the cell's mean t/s, beside the report's paired speedup (geometric mean over prompts),
and the share of each side's span outside the target's decode step (docs/timing.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def num(x: float | None, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def table(run_dir: Path) -> list[str]:
    from specbench.analysis.cells import cell_name
    from specbench.analysis.report import build_report

    rows = [r for r in build_report([run_dir]).rows if r.category == "all"]
    out = [
        "| cell | baseline decode-only t/s | baseline t/s (same span) | spec t/s | old speedup | new speedup "
        "| report's speedup | baseline outside decode | spec outside target passes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        # old and new as the same ratio of means, so they differ only by the baseline's span; the report's
        # own figure is the paired geometric mean over prompts (analysis/pairstats.py), shown beside them
        old = r.spec_tps / r.baseline_decode_tps if r.spec_tps and r.baseline_decode_tps else None
        new = r.spec_tps / r.baseline_tps if r.spec_tps and r.baseline_tps else None
        out.append(
            f"| {cell_name(r)} | {num(r.baseline_decode_tps)} | {num(r.baseline_tps)} | {num(r.spec_tps)} "
            f"| {num(old)}x | {num(new)}x | {num(r.speedup)}x "
            f"| {pct(r.baseline_outside)} | {pct(r.spec_outside)} |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", nargs="?", type=Path)
    ap.add_argument("--config", default="configs/quickstart.yaml")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench-span")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    run = args.run
    if run is None:
        sets = [x for s in args.sets for x in ("--set", s)]
        cmd = [sys.executable, "-m", "specbench", "run", args.config, "--out", str(args.out), "--quiet"]
        res = subprocess.run([*cmd, *sets], stdin=subprocess.DEVNULL)
        if res.returncode not in (0, 3):
            sys.exit(f"specbench run failed (exit {res.returncode})")
        run = args.out
    print("\n".join(table(run)))


if __name__ == "__main__":
    main()

"""Would a stricter CPU-share line tighten the pairs? (issue 44, item 1's 75%)

    .venv/bin/python benchmarks/share_lines.py RUN [RUN ...] [--lines 0.75,0.85,0.9,0.95]

For each run folder of an A/A ``ab`` (one build against itself: every log ratio is noise), per role,
the standard deviation of the pairs' log(head/base) kept at each line of the lower CPU share of a
pair's two samples (``contention.cpu_share``: CPU time over wall time and threads), and the
correlation of the shares' difference with the log ratio. A line that only removes pairs without
narrowing what is left cannot be what the spread comes from.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specbench.machine.contention import cpu_share  # noqa: E402
from specbench.results.records import Sample  # noqa: E402
from specbench.results.samplelog import load_samples  # noqa: E402


def sample_share(s: Sample) -> float | None:
    """A recorded sample's share (``cpu_s`` over its wall time, or its batch's for the server runner)."""
    wall = s.batch_wall_s if s.batch_wall_s is not None else s.wall_s
    return cpu_share(s.cpu_s, wall, s.cpu_threads)


def pairs(run: Path, role: str) -> list[tuple[float, float, float]]:
    """(log ratio, share base, share head) of every complete pair of ``role``."""
    by: dict[tuple, dict] = {}
    for s in load_samples(run):
        if s.role == role and s.valid and s.tps and s.repetition is not None and s.repetition >= 0:
            by.setdefault((s.prompt_id, s.repetition), {})[s.build] = s
    out = []
    for side in by.values():
        if {"base", "head"} <= side.keys():
            a, b = side["base"], side["head"]
            sa, sb = sample_share(a), sample_share(b)
            if sa is not None and sb is not None:
                out.append((math.log(b.tps / a.tps), sa, sb))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--lines", default="0.75,0.85,0.9,0.95")
    args = ap.parse_args()
    lines = [float(x) for x in args.lines.split(",")]
    print("run role line kept sd_log_ratio")
    for run in args.runs:
        for role in ("baseline", "speculative"):
            got = pairs(run, role)
            for line in lines:
                kept = [lr for lr, sa, sb in got if min(sa, sb) >= line]
                sd = f"{statistics.stdev(kept) * 100:.1f}%" if len(kept) > 1 else "-"
                print(f"{run.name} {role} {line:.2f} {len(kept)}/{len(got)} {sd}")
            diffs, ratios = [sb - sa for _, sa, sb in got], [lr for lr, _, _ in got]
            if len(got) > 2 and len(set(diffs)) > 1 and len(set(ratios)) > 1:
                r = f"{statistics.correlation(diffs, ratios):+.2f}"
            else:  # too few pairs, or the shares (or ratios) never differ: no correlation to give
                r = "-"
            print(f"{run.name} {role} corr(share head - share base, log ratio) {r}")


if __name__ == "__main__":
    main()

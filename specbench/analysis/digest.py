"""The quality warnings of a whole report in a few lines: one per kind, naming its cells.

Printed row by row, a run of four cells ends in a wall of lines that repeat the same baseline
outlier under every cell; a reader needs each finding once, with where it holds.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

from specbench.analysis import cells
from specbench.analysis.cells import ReportRow

# said once elsewhere: busy machine loudly on its own line; a build's workaround by the report's note
# for its run (every row of that run carries it, so a digest line would say it a second time)
SKIPPED = ("busy machine", "workaround")
_REPS = re.compile(r"after (\d+) repetitions")
_PRECISION = re.compile(r"precision (\d+(?:\.\d+)?)%")


def cell_name(r: ReportRow, rows: list[ReportRow]) -> str:
    """A cell as a reader tells it from the others of the report (``analysis.cells.cell_name``),
    plus the server's parallel requests and the run when the report has more than one of them."""
    name = cells.cell_name(r)
    if len({x.parallel for x in rows}) > 1:
        name += f" parallel {r.parallel}"
    if len({x.run for x in rows}) > 1:
        name += f" ({r.run})"
    return name


def digest(rows: list[ReportRow]) -> list[str]:
    """One line per kind of warning, in the order kinds first appear."""
    by_kind: dict[str, list[tuple[ReportRow, str]]] = defaultdict(list)
    for r in rows:
        for w in r.warnings:
            kind, _, detail = w.partition(": ")
            if not kind.startswith(SKIPPED):
                by_kind[kind].append((r, detail))
    lines = []
    for kind, found in by_kind.items():
        cells = f"{len(found)} of {len(rows)} cells" if len(rows) > 1 else "the cell"
        if kind == "imprecise":
            lines.append(_imprecise(found, rows, cells))
            continue
        details = list(dict.fromkeys(d for _, d in found))
        if len(details) == 1:  # the same finding under every cell (their shared baseline): said once
            names = ", ".join(cell_name(r, rows) for r, _ in found)
            lines.append(f"{kind} in {cells} ({names}): {details[0]}")
        else:
            each = "; ".join(f"{cell_name(r, rows)}: {d}" for r, d in found)
            lines.append(f"{kind} in {cells}: {each}")
    return lines


def _imprecise(found: list[tuple[ReportRow, str]], rows: list[ReportRow], cells: str) -> str:
    """Which cells miss the precision, by how much, and the repetitions that would meet it: the CI
    half-width shrinks with the square root of the repetitions, so n x (CI / precision)^2."""
    widths = []
    for r, _ in found:
        sides = (("spec", r.spec_tps_rel_ci), ("baseline", r.baseline_tps_rel_ci))
        shown = ", ".join(f"{side} ±{v:.1%}" for side, v in sides if v is not None)
        widths.append(f"{cell_name(r, rows)} {shown}")
    detail = found[0][1]
    reps = int(m.group(1)) if (m := _REPS.search(detail)) else None
    target = float(m.group(1)) / 100 if (m := _PRECISION.search(detail)) else None
    worst = max((v for r, _ in found for v in (r.spec_tps_rel_ci, r.baseline_tps_rel_ci) if v), default=None)
    line = f"imprecise in {cells} ({'; '.join(widths)}): the 95% CI is wider than"
    line += f" precision {target:.1%}" if target else " the precision"
    line += f" after {reps} repetitions" if reps else ""
    if reps and target and worst:
        need = math.ceil(reps * (worst / target) ** 2)
        if need > 100:
            line += (
                f"; about {need} repetitions would meet it on this machine: longer decode windows "
                f"(--set generation.n_predict=...) or a looser precision (--set precision={worst:.2f}) "
                "are the way"
            )
        else:
            line += f"; about {need} would meet it: --set repetitions=auto --set max_repetitions={need}"
    return line

"""The one-figure check (issue 42): report, compare, history and the results site give every cell of
a run the same speedup and interval. Used on recorded folders and on the session's real runs."""

from __future__ import annotations

import math
from pathlib import Path

from specbench.analysis.cells import ALL, run_rows
from specbench.gate.baseline import load_run
from specbench.gate.compare import cell_label, compare
from specbench.gate.history import load_history
from specbench.gate.historydb import record_run
from specbench.publish.series import load_series
from specbench.results import cell


def _same(a: tuple, b: tuple) -> bool:
    return all(
        (x is None and y is None) or (x is not None and y is not None and math.isclose(x, y, rel_tol=1e-9))
        for x, y in zip(a, b, strict=True)
    )


def check_one_figure(run: Path, tmp: Path) -> int:
    """Assert the four agree on every cell; returns the number of cells checked."""
    side = load_run(run)
    rows = [r for r in run_rows(run.name, side.samples, side.facts) if r.category == ALL]
    label_of = {cell.cell_of(s)[1:]: cell_label(s) for s in side.samples if s.role == "speculative"}
    report = {label_of[r.cell()]: (r.speedup, r.speedup_ci_low, r.speedup_ci_high) for r in rows}
    report = {k: v for k, v in report.items() if v[0] is not None}
    assert report, "no cell with a speedup"

    cmp = compare(side, load_run(run), ["speedup"], allow_noisy=True)
    figures = next(m for m in cmp.metrics if m.metric == "speedup").figures
    shown = {f.label: (f.current.value, f.current.low, f.current.high) for f in figures}
    assert {f.label: (f.baseline.value, f.baseline.low, f.baseline.high) for f in figures} == shown

    db = tmp / "history.sqlite"
    record_run(run, db)
    history = {p.label: (p.mean, p.low, p.high) for p in load_history(db, "speedup")}
    site = {s.label: (s.latest.mean, s.latest.low, s.latest.high) for s in load_series([db])
            if s.metric == "speedup"}  # fmt: skip

    for label, figure in report.items():
        for where, other in (("compare", shown), ("history", history), ("site", site)):
            assert label in other, f"{label} not in {where}"
            assert _same(figure, other[label]), f"{label}: report {figure} vs {where} {other[label]}"
    return len(report)

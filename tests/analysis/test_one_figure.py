"""One cell, one figure: report, compare, history and the results site show the same speedup and
interval for every cell of a run (issue 42: one cell read 3.87x in report, 110x in history and 46x
on the site, each pairing or summarising its own way).

Run on recorded real run folders: a process run (quickstart-3rep) and a server run with the A B A
baseline bracket (server-aba), where pairing with the wrong window used to move the speedup."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from specbench.analysis.cells import ALL, run_rows
from specbench.gate.baseline import load_run
from specbench.gate.compare import cell_label, compare
from specbench.gate.history import load_history, record_run
from specbench.publish.series import load_series
from specbench.results import cell

RUNS = Path(__file__).parents[1] / "data" / "runs"


def _same(a: tuple, b: tuple) -> bool:
    return all(
        (x is None and y is None) or (x is not None and y is not None and math.isclose(x, y, rel_tol=1e-9))
        for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("name", ["quickstart-3rep", "server-aba"])
def test_report_compare_history_and_site_show_one_speedup_per_cell(tmp_path, name):
    run = RUNS / name
    side = load_run(run)
    rows = [r for r in run_rows(name, side.samples, side.facts) if r.category == ALL]
    label_of = {cell.cell_of(s)[1:]: cell_label(s) for s in side.samples if s.role == "speculative"}
    report = {label_of[r.cell()]: (r.speedup, r.speedup_ci_low, r.speedup_ci_high) for r in rows}
    assert report and all(v[0] is not None for v in report.values())

    cmp = compare(side, load_run(run), ["speedup"], allow_noisy=True)
    figures = next(m for m in cmp.metrics if m.metric == "speedup").figures
    shown = {f.label: (f.current.value, f.current.low, f.current.high) for f in figures}
    assert {f.label: (f.baseline.value, f.baseline.low, f.baseline.high) for f in figures} == shown

    db = tmp_path / "history.sqlite"
    record_run(run, db)
    history = {p.label: (p.mean, p.low, p.high) for p in load_history(db, "speedup")}
    site = {s.label: (s.latest.mean, s.latest.low, s.latest.high) for s in load_series([db])
            if s.metric == "speedup"}  # fmt: skip

    assert report.keys() == shown.keys() == history.keys() == site.keys()
    for label, figure in report.items():
        for where, other in (("compare", shown), ("history", history), ("site", site)):
            assert _same(figure, other[label]), f"{label}: report {figure} vs {where} {other[label]}"

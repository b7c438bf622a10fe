"""The report numbers of the recorded runs in tests/data/runs, as a JSON-able dict.

``tests/data/golden/report-before-cell.json`` was written by this function running on main's
code before the cell redesign (issue 20): ``PYTHONPATH=<old checkout> python -m
tests.analysis.golden_report``; issue 36 replaced its speedup numbers and notes with the paired
speedup's (test_golden_report says which). test_golden_report compares today's numbers with it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUNS = ("tests/data/runs/quick-cpu", "tests/data/runs/ngl-sweep-cpu")
GOLDEN = REPO / "tests" / "data" / "golden" / "report-before-cell.json"


def report_numbers() -> dict:
    """Every report row (all fields), the notes, and the history identity of every sample."""
    from specbench.analysis.report import build_report
    from specbench.gate.historydb import _cell_id
    from specbench.results.manifest import cell_key
    from specbench.results.manifestfile import read_run

    here = Path.cwd()
    os.chdir(REPO)  # relative run paths: the notes name them
    try:
        out: dict = {}
        for runs in ([RUNS[0]], [RUNS[1]], list(RUNS)):
            report = build_report([Path(r) for r in runs])
            out["+".join(runs)] = {
                "rows": [json.loads(r.model_dump_json()) for r in report.rows],
                "notes": report.notes,
            }
        for run in RUNS:
            stored = read_run(Path(run))
            out[f"identity:{run}"] = [_cell_id(cell_key(s, stored.facts), "machine") for s in stored.samples]
        return out
    finally:
        os.chdir(here)


if __name__ == "__main__":
    json.dump(report_numbers(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")

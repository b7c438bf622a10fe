"""One cell, one figure: report, compare, history and the results site show the same speedup and
interval for every cell of a run (issue 42: one cell read 3.87x in report, 110x in history and 46x
on the site, each pairing or summarising its own way).

On recorded real run folders: a process run (quickstart-3rep) and a server run with the A B A
baseline bracket (server-aba), where pairing with another window used to move the speedup. The
same check runs on the session's real runs in tests/cli/test_independence_real.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.figures import check_one_figure

RUNS = Path(__file__).parents[1] / "data" / "runs"


@pytest.mark.parametrize("name", ["quickstart-3rep", "server-aba"])
def test_report_compare_history_and_site_show_one_speedup_per_cell(tmp_path, name):
    assert check_one_figure(RUNS / name, tmp_path) >= 1

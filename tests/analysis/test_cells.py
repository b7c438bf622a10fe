"""The cost ratio c each kind of method gets in a report row (analysis.cells.cost_ratio_of)."""

from __future__ import annotations

import pytest

from specbench.analysis.cells import cost_ratio_of


def test_cost_ratio_by_method():
    assert cost_ratio_of("draft", "small", 20.0, 80.0) == pytest.approx(0.25)  # measured alone
    assert cost_ratio_of("draft+ngram-mod", "small", 20.0, 80.0) == pytest.approx(0.25)
    assert cost_ratio_of("ngram-mod", None, 20.0, None) == 0.0  # a lookup is free
    # a head or MTP layers cannot run alone: c is unknown, not free (no optimistic prediction)
    assert cost_ratio_of("draft-mtp", None, 20.0, None) is None
    assert cost_ratio_of("draft-eagle3", "head", 20.0, None) is None


def test_a_rows_tps_columns_divide_to_its_speedup():
    """Issue 58: on the quickstart the t/s columns were arithmetic means over prompts (dominated by
    the one prompt that copies) beside a geometric speedup: 89.6 / 50.5 t/s = 1.77x on a 1.25x row.
    On a recorded run whose prompts differ threefold, every row's spec t/s over its baseline t/s is
    its speedup, as numbers and as the table prints them (within rounding)."""
    from pathlib import Path

    from specbench.analysis.render import columns
    from specbench.analysis.report import build_report

    run = Path(__file__).resolve().parents[1] / "data" / "runs" / "quickstart-3rep"
    report = build_report([run])
    rows = report.shown(True)
    spread = [r.speedup_prompt_high / r.speedup_prompt_low for r in rows if r.speedup_prompts > 1]
    assert spread and max(spread) > 3  # prompts that differ: an arithmetic mean would not divide
    cols = {c.header: c for c in columns(rows, 1)}
    for r in rows:
        assert r.spec_tps / r.baseline_tps == pytest.approx(r.speedup, rel=1e-9), (r.method, r.category)
        spec = float(cols["spec t/s"].cell(r).split(" ± ")[0])
        base = float(cols["baseline t/s"].cell(r).split(" ± ")[0])
        shown = float(cols["speedup [95% CI]"].cell(r).lstrip("★ ").split("x")[0])
        rounding = spec / base * (0.05 / spec + 0.05 / base) + 0.005
        assert abs(spec / base - shown) <= rounding, (r.method, r.category, spec, base, shown)

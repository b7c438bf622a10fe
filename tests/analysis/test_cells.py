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

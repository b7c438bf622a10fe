"""specbench.analysis.speedmodel's Leviathan model against independent computations (the defining
equations, brute force) rather than against re-typed copies of the same formulas."""

import math

import pytest

from specbench.analysis.speedmodel import (
    best_draft_length,
    cost_ratio,
    expected_tokens_per_pass,
    predicted_speedup,
)


@pytest.mark.parametrize("a,g,c", [(0.8, 4, 0.05), (0.6, 2, 0.3), (0.95, 16, 0.02), (0.0, 3, 0.1)])
def test_predicted_speedup_is_leviathans_closed_form(a, g, c):
    closed = (1 - a ** (g + 1)) / ((1 - a) * (g * c + 1))
    assert predicted_speedup(a, g, c) == pytest.approx(closed)


def test_predicted_speedup_edge_cases():
    assert predicted_speedup(1.0, 7, 0.1) == pytest.approx(8 / 1.7)  # limit g + 1 tokens per pass
    assert predicted_speedup(1 - 1e-12, 7, 0.1) == pytest.approx(8 / 1.7)
    assert predicted_speedup(0.5, 3, 0.0) == pytest.approx(1.875)  # free drafts: tokens per pass
    assert expected_tokens_per_pass(0.5, 0) == 1.0
    for bad in [(1.2, 3, 0.1), (-0.1, 3, 0.1), (0.5, -1, 0.1), (0.5, 3, -0.2), (0.5, 3, math.inf)]:
        with pytest.raises(ValueError):
            predicted_speedup(*bad)


def test_best_draft_length():
    a, c = 0.8, 0.1
    brute = max(range(1, 65), key=lambda g: (1 - a ** (g + 1)) / ((1 - a) * (g * c + 1)))
    assert best_draft_length(a, c) == brute
    assert 1 < brute < 64
    # a cheaper draft makes longer drafts pay
    assert best_draft_length(0.9, 0.01) > best_draft_length(0.9, 0.2)
    assert best_draft_length(0.0, 0.1) == 1  # nothing accepted: the shortest draft loses least
    assert best_draft_length(0.5, 0.0) is None  # free drafts: no optimum
    assert best_draft_length(1.0, 1e-4) is None  # always accepted, nearly free: keeps improving


def test_cost_ratio():
    assert cost_ratio(66.0, 122.0) == pytest.approx(66 / 122)
    assert cost_ratio(None, 122.0) is None
    assert cost_ratio(66.0, 0.0) is None

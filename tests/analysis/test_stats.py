"""specbench.analysis.stats against independent computations (statistics module, scipy, the defining
equations) rather than against re-typed copies of the same formulas."""

import math
import statistics

import pytest
from scipy import stats as sps

from specbench.analysis import stats


def test_summarize_matches_statistics_and_scipy_interval():
    xs = [66.1, 64.9, 67.3, 65.0, 66.8]
    s = stats.summarize(xs)
    assert s.n == 5
    assert s.mean == pytest.approx(statistics.mean(xs))
    assert s.sd == pytest.approx(statistics.stdev(xs))
    low, high = sps.t.interval(0.95, len(xs) - 1, loc=statistics.mean(xs), scale=sps.sem(xs))
    assert (s.ci_low, s.ci_high) == (pytest.approx(low), pytest.approx(high))


def test_summarize_small_samples():
    assert stats.summarize([]) == stats.Summary(0, None, None, None, None)
    one = stats.summarize([3.5])
    assert (one.n, one.mean, one.sd, one.ci_low) == (1, 3.5, None, None)
    same = stats.summarize([2.0, 2.0, 2.0])
    assert (same.sd, same.ci_low, same.ci_high) == (0.0, 2.0, 2.0)


@pytest.mark.parametrize("a,g,c", [(0.8, 4, 0.05), (0.6, 2, 0.3), (0.95, 16, 0.02), (0.0, 3, 0.1)])
def test_predicted_speedup_is_leviathans_closed_form(a, g, c):
    closed = (1 - a ** (g + 1)) / ((1 - a) * (g * c + 1))
    assert stats.predicted_speedup(a, g, c) == pytest.approx(closed)


def test_predicted_speedup_edge_cases():
    assert stats.predicted_speedup(1.0, 7, 0.1) == pytest.approx(8 / 1.7)  # limit g + 1 tokens per pass
    assert stats.predicted_speedup(1 - 1e-12, 7, 0.1) == pytest.approx(8 / 1.7)
    assert stats.predicted_speedup(0.5, 3, 0.0) == pytest.approx(1.875)  # free drafts: tokens per pass
    assert stats.expected_tokens_per_pass(0.5, 0) == 1.0
    for bad in [(1.2, 3, 0.1), (-0.1, 3, 0.1), (0.5, -1, 0.1), (0.5, 3, -0.2), (0.5, 3, math.inf)]:
        with pytest.raises(ValueError):
            stats.predicted_speedup(*bad)


def test_best_draft_length():
    a, c = 0.8, 0.1
    brute = max(range(1, 65), key=lambda g: (1 - a ** (g + 1)) / ((1 - a) * (g * c + 1)))
    assert stats.best_draft_length(a, c) == brute
    assert 1 < brute < 64
    # a cheaper draft makes longer drafts pay
    assert stats.best_draft_length(0.9, 0.01) > stats.best_draft_length(0.9, 0.2)
    assert stats.best_draft_length(0.0, 0.1) == 1  # nothing accepted: the shortest draft loses least
    assert stats.best_draft_length(0.5, 0.0) is None  # free drafts: no optimum
    assert stats.best_draft_length(1.0, 1e-4) is None  # always accepted, nearly free: keeps improving


def test_cost_ratio():
    assert stats.cost_ratio(66.0, 122.0) == pytest.approx(66 / 122)
    assert stats.cost_ratio(None, 122.0) is None
    assert stats.cost_ratio(66.0, 0.0) is None

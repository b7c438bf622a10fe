"""specbench.base.stats, the one statistics module, against independent computations (the
statistics module, scipy) rather than against re-typed copies of the same formulas."""

import statistics

import pytest
from scipy import stats as sps

from specbench.base import stats


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


def test_welch_is_scipys_interval_two_and_one_sided():
    base, cur = [50.0, 51.0, 49.0], [45.0, 47.0, 46.0, 44.0]
    res = sps.ttest_ind(cur, base, equal_var=False)
    two = res.confidence_interval(0.95)
    diff, half = stats.welch(base, cur)
    assert (diff - half, diff + half) == (pytest.approx(two.low), pytest.approx(two.high))
    one = sps.ttest_ind(cur, base, equal_var=False, alternative="greater").confidence_interval(0.95)
    diff, reach = stats.welch(base, cur, 0.90)  # a one-sided 95% bound is the two-sided 90% one
    assert diff - reach == pytest.approx(one.low)
    assert stats.welch([50.0], cur) is None
    assert stats.welch([50.0, 50.0], [40.0, 40.0]) == (-10.0, 0.0)  # no noise: the change is exact


def test_signed_rank_p_is_scipys_wilcoxon():
    d = [0.3, -0.1, 0.5, 0.2, 0.8, -0.4, 0.6, 0.7]
    assert stats.signed_rank_p(d) == pytest.approx(sps.wilcoxon(d).pvalue)
    tied = [0.2, 0.2, -0.2, 0.5, 0.5, 0.1, 0.0]  # ties and a zero: the normal approximation
    assert stats.signed_rank_p(tied) == pytest.approx(
        sps.wilcoxon(tied, method="approx", correction=True).pvalue
    )
    assert stats.signed_rank_p([0.0, 0.0]) == 1.0


def test_too_few_differences_for_a_signed_rank_interval_give_the_t_interval():
    """Below MIN_PAIRS at 95% no signed-rank interval exists: every caller wants the t interval."""
    d = [0.02, 0.05, 0.03]
    iv = stats.interval(d)
    low, high = sps.t.interval(0.95, 2, loc=statistics.mean(d), scale=sps.sem(d))
    assert not iv.signed_rank and iv.estimate == pytest.approx(statistics.mean(d))
    assert (iv.low, iv.high) == (pytest.approx(low), pytest.approx(high))
    assert stats.interval(d * 3).signed_rank  # 9 differences reach one

"""The gate's statistics against reference values: Welch's test by its textbook formulas and a
published example, CV, geometric mean, threshold parsing, and the decision rules."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from specbench.base.errors import SpecbenchError
from specbench.gate.regression import (
    Status,
    cv,
    decide_acceptance,
    decide_throughput,
    geometric_mean,
    parse_threshold,
    welch_one_sided,
)


def welch_by_hand(a, b):
    """t and Welch-Satterthwaite df from the formulas, p from the t distribution's survival function."""
    na, nb = len(a), len(b)
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((x - ma) ** 2 for x in a) / (na - 1)
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1)
    se2 = va / na + vb / nb
    t = (ma - mb) / math.sqrt(se2)
    df = se2**2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    return t, df, float(stats.t.sf(t, df))  # one-sided: mean(a) > mean(b)


def test_welch_matches_hand_formulas_on_small_samples():
    base = [41.2, 40.7, 42.1]
    cur = [37.9, 39.4, 38.3, 38.8]
    t, df, p_greater = welch_by_hand(base, cur)
    assert t > 0 and 2 < df < 5
    assert welch_one_sided(base, cur, "greater") == pytest.approx(p_greater, rel=1e-9)
    assert welch_one_sided(base, cur, "less") == pytest.approx(1 - p_greater, rel=1e-9)


def test_welch_matches_published_example():
    # Wikipedia, "Welch's t-test", example 1: t = -2.46, df = 25.0, two-sided p = 0.021.
    a1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
    a2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]
    t, df, _ = welch_by_hand(a1, a2)
    assert t == pytest.approx(-2.46, abs=0.005)
    assert df == pytest.approx(25.0, abs=0.05)
    assert 2 * welch_one_sided(a1, a2, "less") == pytest.approx(0.021, abs=0.0005)


def test_welch_zero_variance_decided_by_means():
    assert welch_one_sided([5.0, 5.0, 5.0], [4.0, 4.0, 4.0], "greater") == 0.0
    assert welch_one_sided([4.0, 4.0, 4.0], [5.0, 5.0, 5.0], "greater") == 1.0
    with pytest.raises(ValueError):
        welch_one_sided([1.0], [2.0, 3.0])


def test_cv_and_geometric_mean():
    assert cv([9.0, 10.0, 11.0]) == pytest.approx(0.1)  # sd 1 (n - 1), mean 10
    assert cv([3.0]) is None
    assert geometric_mean([0.5, 2.0]) == pytest.approx(1.0)
    assert geometric_mean([0.8, 0.9, 1.0]) == pytest.approx(0.72 ** (1 / 3))
    assert geometric_mean([]) is None


@pytest.mark.parametrize(
    "text,value", [("5%", 0.05), ("0.05", 0.05), (" 2.5 % ", 0.025), ("0", 0.0), (0.1, 0.1)]
)
def test_parse_threshold(text, value):
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["5", "abc", "150%", "-1%", "nan"])
def test_parse_threshold_refuses(text):
    with pytest.raises(SpecbenchError) as exc:
        parse_threshold(text)
    assert exc.value.exit_code == 2 and "--threshold" in str(exc.value)


def test_significant_drop_fails():
    d = decide_throughput([50.1, 49.8, 50.3], [40.2, 40.5, 39.9], threshold=0.05)
    assert d.status == Status.FAIL
    assert d.ratio == pytest.approx(40.2 / 50.0666, rel=1e-3)
    assert d.p_value == pytest.approx(welch_by_hand([50.1, 49.8, 50.3], [40.2, 40.5, 39.9])[2], rel=1e-9)


def test_drop_beyond_threshold_without_significance_is_too_noisy():
    # -10% on average, but one side scatters so much the t-test cannot tell: the data cannot
    # exclude a 5% regression, nor show one.
    d = decide_throughput([50.0, 30.0, 70.0], [45.0, 44.0, 46.0], threshold=0.05)
    assert d.p_value > 0.05
    assert d.status == Status.TOO_NOISY and "too noisy to decide" in d.reason
    assert d.low < d.change < -0.05 < d.high and d.mde > 0.05 and "mde" in d.reason


def test_small_change_passes_and_significant_small_change_still_passes():
    assert decide_throughput([50.0, 50.2, 49.9], [49.4, 49.6, 49.5], threshold=0.05).status == Status.PASS


def test_improvement_is_reported():
    d = decide_throughput([40.0, 40.2, 39.9], [50.0, 50.1, 49.8], threshold=0.05)
    assert d.status == Status.IMPROVED and d.change > 0.2


def test_one_value_a_side_fails_beyond_the_threshold_and_decides_nothing_else():
    d = decide_throughput([50.0], [44.0], threshold=0.05)
    assert d.status == Status.FAIL and d.p_value is None and d.mde is None and "no noise estimate" in d.reason
    unsure = decide_throughput([50.0], [49.0], threshold=0.05)
    assert unsure.status == Status.TOO_NOISY and "noise unknown" in unsure.reason
    assert decide_throughput([50.0, 50.1], [44.0, 44.2], threshold=0.05).status == Status.FAIL  # 2 suffice


def test_noisy_side_is_too_noisy_but_never_hides_a_failure():
    noisy = decide_throughput([50.0, 50.0, 50.0], [42.0, 50.0, 58.0], threshold=0.05)
    assert noisy.cv_cur == pytest.approx(0.16)
    assert noisy.status == Status.TOO_NOISY and "too noisy to decide" in noisy.reason
    quiet_enough = decide_throughput([50.0] * 3, [42.0, 50.0, 58.0], threshold=0.5)  # a 50% gate resolves it
    assert quiet_enough.status == Status.WARN and "noisy" in quiet_enough.reason
    both = decide_throughput([50.0, 50.2, 49.8], [26.0, 36.0, 32.0], threshold=0.05)
    assert both.status == Status.FAIL and "noisy" in both.reason


def test_acceptance_at_temperature_zero_uses_absolute_points():
    drop = decide_acceptance([0.80, 0.80, 0.80], [0.77, 0.77, 0.77], temperature=0.0)
    assert drop.status == Status.FAIL and drop.change == pytest.approx(-3.0)
    assert decide_acceptance([0.80] * 3, [0.79] * 3, temperature=0.0).status == Status.PASS
    assert decide_acceptance([0.70] * 3, [0.75] * 3, temperature=0.0).status == Status.IMPROVED


def test_acceptance_above_zero_temperature_needs_significance():
    d = decide_acceptance([0.80, 0.60, 0.90], [0.70, 0.72, 0.68], temperature=0.8)
    assert d.change < -2 and d.p_value > 0.05 and d.status == Status.TOO_NOISY and d.low < -2
    sure = decide_acceptance([0.80, 0.81, 0.79], [0.70, 0.71, 0.69], temperature=0.8)
    assert sure.status == Status.FAIL and sure.change == pytest.approx(-10.0) and sure.high < 0
    same = decide_acceptance([0.80, 0.81, 0.79], [0.80, 0.80, 0.81], temperature=0.8)
    assert same.status == Status.PASS and same.low >= -2


def test_unsure_improvement_passes_and_thresholds_print_exactly():
    d = decide_throughput([40.0, 40.0, 40.0], [60.0, 30.0, 45.0], threshold=0.025)
    assert d.change > 0.025 and d.p_value > 0.05
    assert d.status == Status.TOO_NOISY and d.mde > 0.025 and d.low < -0.025
    small = decide_throughput([50.0, 50.1, 49.9], [49.5, 49.6, 49.4], threshold=0.025)
    assert small.status == Status.PASS and "excludes a drop beyond -2.5%" in small.reason


# --- The issue-24 examples: a gate that passed real drops ------------------------------------


def test_ten_percent_drop_with_two_repetitions_fails():
    """Issue 24: -10% with 2 repetitions each was "too noisy to decide: -10.0% ±5.8%" and passed;
    the same data with one repetition a side failed. Both fail: significant and beyond 5%."""
    base, cur = [49.52, 50.48], [44.52, 45.48]
    d = decide_throughput(base, cur)
    assert d.change == pytest.approx(-0.10) and d.status == Status.FAIL and d.p_value < 0.05
    se = math.sqrt(2 * (0.96**2 / 2) / 2)  # Welch: each side's variance 0.96^2 / 2 over n = 2; df 2
    assert stats.t.ppf(0.975, 2) * se / 50 == pytest.approx(0.058, abs=5e-4)  # the issue's ±5.8% (95% CI)
    assert d.high < 0 and d.mde == pytest.approx(stats.t.ppf(0.95, 2) * se / 50)
    assert decide_throughput(base[:1], cur[:1]).status == Status.FAIL


def test_a_hundredfold_drop_fails():
    """Issue 24: a copy of a run with speculative t/s x 0.01 passed as "too noisy"."""
    base = [45.1, 52.3, 48.7]
    for n in (1, 2, 3):
        d = decide_throughput(base[:n], [x * 0.01 for x in base[:n]])
        assert d.status == Status.FAIL and d.change == pytest.approx(-0.99), n


def test_a_noisy_pass_is_not_a_pass_and_a_noisy_fail_is_a_fail():
    # within the threshold, but the data could hide a 12% drop: too noisy, not pass
    d = decide_throughput([50.0, 47.0, 53.0], [49.5, 46.5, 52.5])
    assert d.status == Status.TOO_NOISY and -0.05 < d.change < 0 and d.low < -0.05
    # -30% with CV 15% on both sides: significant and beyond 5% whatever the noise
    d = decide_throughput([50.0, 42.0, 58.0], [35.0, 29.4, 40.6])
    assert d.status == Status.FAIL and "noisy" in d.reason


def test_too_noisy_means_a_threshold_sized_regression_is_not_excluded():
    rng = random.Random(7)
    for _ in range(300):
        n_b, n_c = rng.randint(2, 6), rng.randint(2, 6)
        base = [rng.gauss(50, rng.uniform(0.1, 10)) for _ in range(n_b)]
        cur = [rng.gauss(50 * rng.uniform(0.8, 1.2), rng.uniform(0.1, 10)) for _ in range(n_c)]
        d = decide_throughput(base, cur, threshold=0.05)
        assert d.low <= d.change <= d.high and d.mde == pytest.approx(d.change - d.low)
        if d.status == Status.TOO_NOISY:
            assert d.low < -0.05 and not (d.change < -0.05 and d.high < 0)
        if d.status in (Status.PASS, Status.WARN, Status.IMPROVED):
            assert d.low >= -0.05 or d.status == Status.IMPROVED
        assert (d.status == Status.FAIL) == (d.change < -0.05 and d.high < 0)
        if d.status == Status.FAIL:
            assert d.p_value < 0.05


values = st.lists(st.floats(10, 100), min_size=1, max_size=6)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(base=values, cur=values, factor=st.floats(0.05, 0.94), extra_b=values, extra_c=values)
def test_more_data_never_turns_a_fail_into_a_pass(base, cur, factor, extra_b, extra_c):
    """A drop beyond the threshold never passes, however many samples are added, as long as the
    data still shows the drop; and replicating failing data (the same drop, measured more) keeps
    it failing."""
    cur = [x * factor for x in cur]
    first = decide_throughput(base, cur)
    more_b, more_c = base + extra_b, cur + [x * factor for x in extra_c]
    more = decide_throughput(more_b, more_c)
    if more.change < -0.05:
        assert more.status in (Status.FAIL, Status.TOO_NOISY)
    if first.status == Status.FAIL:
        # significant: stays so; beyond the threshold with one value a side (no noise estimate):
        # more of the same data may find it too noisy, never a pass
        expected = {Status.FAIL} if first.high is not None else {Status.FAIL, Status.TOO_NOISY}
        for k in (2, 3, 5):
            assert decide_throughput(base * k, cur * k).status in expected
        # values at each side's mean: the same drop with less spread
        spread_less = decide_throughput(base + [first.mean_base] * 3, cur + [first.mean_cur] * 3)
        assert spread_less.status in expected


def test_a_noisy_bound_is_never_shown_below_minus_100_percent():
    """The Welch bound is linear and can pass -100%; a t/s cannot fall further than to 0."""
    d = decide_throughput([100.0, 10.0, 190.0], [40.0, 42.0, 41.0])
    assert d.low is not None and d.low < -1.0  # the bound itself, as computed
    assert "could be -100.0%:" in d.reason

"""The gate's statistics against reference values: Welch's test by its textbook formulas and a
published example, CV, geometric mean, threshold parsing, and the decision rules."""

import math

import pytest
from scipy import stats

from specbench.errors import SpecbenchError
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
    # -10% on average, but one side scatters so much the t-test cannot tell: its CI on the change
    # is wider than the threshold, so the cell can neither show nor rule out a 5% regression.
    d = decide_throughput([50.0, 30.0, 70.0], [45.0, 44.0, 46.0], threshold=0.05)
    assert d.p_value > 0.05
    assert d.status == Status.TOO_NOISY and "too noisy to decide" in d.reason
    assert d.noise > 0.05


def test_small_change_passes_and_significant_small_change_still_passes():
    assert decide_throughput([50.0, 50.2, 49.9], [49.4, 49.6, 49.5], threshold=0.05).status == Status.PASS


def test_improvement_is_reported():
    d = decide_throughput([40.0, 40.2, 39.9], [50.0, 50.1, 49.8], threshold=0.05)
    assert d.status == Status.IMPROVED and d.change > 0.2


def test_few_repetitions_threshold_alone_decides():
    d = decide_throughput([50.0, 50.1], [44.0, 44.2], threshold=0.05)
    assert d.status == Status.FAIL and d.p_value is None and "too few" in d.reason
    assert decide_throughput([50.0], [49.0], threshold=0.05).status == Status.PASS


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
    assert d.change < -2 and d.p_value > 0.05 and d.status == Status.WARN


def test_unsure_improvement_passes_and_thresholds_print_exactly():
    d = decide_throughput([40.0, 40.0, 40.0], [60.0, 30.0, 45.0], threshold=0.025)
    assert d.change > 0.025 and d.p_value > 0.05
    assert d.status == Status.TOO_NOISY and d.noise > 0.025
    small = decide_throughput([50.0, 50.1, 49.9], [49.5, 49.6, 49.4], threshold=0.025)
    assert small.status == Status.PASS and "within ±2.5%" in small.reason

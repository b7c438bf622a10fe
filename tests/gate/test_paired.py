"""The paired statistic on constructed data: outliers, A/A, a 5% drop, and its invariants."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specbench.base.stats import MIN_PAIRS, _critical, _signed_rank_cdf, hodges_lehmann, interval
from specbench.gate.decision import Status as Outcome
from specbench.gate.paired import decide_points, decide_ratio


def _noisy(n: int, level: float, sd: float, seed: int) -> tuple[list[float], list[float]]:
    """n pairs of t/s around 56 with ``sd`` relative noise; head is ``level`` times base."""
    rng = random.Random(seed)
    base = [56 * math.exp(rng.gauss(0, sd)) for _ in range(n)]
    head = [56 * level * math.exp(rng.gauss(0, sd)) for _ in range(n)]
    return base, head


def test_hodges_lehmann_is_the_median_of_walsh_averages():
    assert hodges_lehmann([1.0, 2.0, 3.0]) == 2.0  # 1, 1.5, 2, 2, 2.5, 3
    assert hodges_lehmann([0.0, 0.0, 10.0]) == 2.5  # 0, 0, 0, 5, 5, 10


def test_signed_rank_distribution_and_critical_values():
    assert _signed_rank_cdf(6)[0] == 1 / 64
    assert _critical(5, 0.95) is None  # 2/32 > 5%: no 95% interval from 5 pairs
    c, coverage = _critical(6, 0.95)
    assert c == 1 and coverage == pytest.approx(1 - 2 / 64)
    # Hollander & Wolfe's table: n = 10 at 95% uses the 9th smallest and largest Walsh averages
    assert _critical(10, 0.95)[0] == 9
    # the normal approximation beyond the exact range agrees with the exact values at its border
    exact = _critical(200, 0.95)[0]
    from specbench.base import stats as pairstats

    old = pairstats.EXACT_UP_TO
    try:
        pairstats.EXACT_UP_TO = 10
        assert abs(_critical(200, 0.95)[0] - exact) <= 2
    finally:
        pairstats.EXACT_UP_TO = old


def test_one_outlier_does_not_widen_the_interval_much():
    """The issue's case: a single 19 t/s sample among ~56 widened a t interval sevenfold."""
    base, head = _noisy(18, 1.0, 0.01, seed=3)
    clean = decide_ratio(base, head, threshold=0.05)
    head[4] = 19.0
    dirty = decide_ratio(base, head, threshold=0.05)
    assert clean.status == dirty.status == Outcome.PASS
    width = lambda d: math.log(d.ci_high / d.ci_low)  # noqa: E731
    assert width(dirty) < 1.6 * width(clean)
    assert abs(dirty.ratio - clean.ratio) < 0.01


def test_a_five_percent_drop_fails_and_a_tiny_one_passes():
    base, head = _noisy(18, 0.93, 0.015, seed=1)
    d = decide_ratio(base, head, threshold=0.05)
    assert d.status == Outcome.FAIL and d.ci_high < 1 and d.ratio < 0.95
    assert d.p_value < 0.01
    base, head = _noisy(18, 0.99, 0.01, seed=2)
    assert decide_ratio(base, head, threshold=0.05).status == Outcome.PASS
    base, head = _noisy(18, 1.08, 0.01, seed=2)
    assert decide_ratio(base, head, threshold=0.05).status == Outcome.IMPROVED


def test_noise_wider_than_the_threshold_is_undecided_and_says_what_it_could_detect():
    base, head = _noisy(8, 0.97, 0.10, seed=4)
    d = decide_ratio(base, head, threshold=0.05)
    assert d.status == Outcome.UNDECIDED
    assert d.detectable > 0.05 and "detects changes of" in d.reason


def test_a_significant_drop_smaller_than_the_threshold_is_not_a_fail():
    base, head = _noisy(30, 0.97, 0.003, seed=5)
    d = decide_ratio(base, head, threshold=0.05)
    assert d.ci_high < 1 and d.status == Outcome.PASS


def test_too_few_pairs_for_signed_ranks_take_the_t_interval():
    """2-5 pairs: a plain drop beyond the threshold fails (more data never needed to see -99%), an
    A/A fails at most as often as a 95% interval errs on one side; one pair: the threshold decides."""
    base, head = _noisy(MIN_PAIRS - 1, 0.01, 0.0001, seed=6)
    d = decide_ratio(base, head)
    assert d.status == Outcome.FAIL and d.ci_high < 0.02 and "t interval" in d.reason
    two = decide_ratio([50, 51], [40, 40.9], threshold=0.05)
    assert two.status == Outcome.FAIL and two.n_pairs == 2
    fails = 0
    for seed in range(400):  # A/A, 3 pairs, 1.5% noise, 2% threshold: every fail is a false alarm
        base, head = _noisy(3, 1.0, 0.015, seed=300 + seed)
        fails += decide_ratio(base, head, threshold=0.02).status == Outcome.FAIL
    assert fails <= 0.025 * 400
    wide = decide_ratio([50, 60, 40], [52, 45, 48], threshold=0.05)
    assert wide.status == Outcome.UNDECIDED and wide.detectable > 0.05
    assert decide_ratio([50], [0.5]).status == Outcome.FAIL
    one = decide_ratio([50], [49])
    assert one.status == Outcome.UNDECIDED and "1 pair" in one.reason and one.ci_low is None
    assert decide_ratio([], []).status == Outcome.UNDECIDED


def test_pairs_with_a_bad_value_are_dropped():
    d = decide_ratio([50, 0, 50, float("nan")], [50, 50, 50, 50])
    assert d.n_pairs == 2


def test_a_a_false_fail_rate_is_at_most_alpha_half():
    """Same-distribution pairs (A/A, 18 pairs, 1.5% noise): fails stay rare, decisions mostly pass."""
    fails = passes = 0
    for seed in range(400):
        base, head = _noisy(18, 1.0, 0.015, seed=1000 + seed)
        out = decide_ratio(base, head, threshold=0.02).status
        fails += out == Outcome.FAIL
        passes += out == Outcome.PASS
    assert fails <= 0.025 * 400
    assert passes >= 0.6 * 400


def test_interval_coverage_is_at_least_nominal():
    hits = 0
    for seed in range(400):
        rng = random.Random(seed)
        d = [rng.gauss(0.3, 1.0) for _ in range(12)]
        iv = interval(d)
        hits += iv.low <= 0.3 <= iv.high
    assert hits >= 0.93 * 400


def test_acceptance_in_points():
    same = decide_points([0.9] * 6, [0.9] * 6)
    assert same.status == Outcome.PASS and same.ratio == 0 and same.p_value == 1.0
    drop = decide_points([0.9 + i * 0.001 for i in range(8)], [0.8 + i * 0.001 for i in range(8)])
    assert drop.status == Outcome.FAIL and drop.ratio == pytest.approx(-10)
    assert drop.unit == "points"


def test_p_value_matches_scipy():
    from scipy.stats import wilcoxon

    d = [0.3, -0.1, 0.25, 0.4, 0.05, -0.02, 0.6, 0.33, 0.12]
    assert interval(d).p_value == pytest.approx(wilcoxon(d).pvalue)
    tied = [0.1, 0.1, -0.1, 0.2, 0.3, 0.3, 0.4, 0.5]
    assert interval(tied).p_value == pytest.approx(wilcoxon(tied, method="approx", correction=True).pvalue)


diffs = st.lists(st.floats(-1, 1, allow_nan=False, allow_subnormal=False), min_size=MIN_PAIRS, max_size=40)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(diffs, st.floats(-1, 1, allow_nan=False))
def test_shift_equivariance_and_estimate_inside_interval(d, shift):
    iv = interval(d)
    moved = interval([x + shift for x in d])
    assert moved.estimate == pytest.approx(iv.estimate + shift, abs=1e-9)
    assert moved.low == pytest.approx(iv.low + shift, abs=1e-9)
    assert iv.low <= iv.estimate <= iv.high


@settings(max_examples=100, deadline=None, derandomize=True)
@given(diffs, st.integers(0, 39), st.sampled_from([-1e6, 1e6]))
def test_one_wild_value_cannot_drag_the_estimate_outside_the_others(d, index, wild):
    index %= len(d)
    clean = d[:index] + d[index + 1 :]
    dirty = d[:index] + [wild] + d[index + 1 :]
    est = hodges_lehmann(dirty)
    assert min(clean) - 1e-12 <= est <= max(clean) + 1e-12


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.floats(1, 200), st.floats(-0.2, 0.2)), min_size=MIN_PAIRS, max_size=30))
def test_swapping_builds_mirrors_the_decision(pairs):
    base = [b for b, _ in pairs]
    head = [b * math.exp(noise) for b, noise in pairs]
    ab, ba = decide_ratio(base, head), decide_ratio(head, base)
    assert ab.ratio * ba.ratio == pytest.approx(1.0)
    # the threshold is a relative change (-5% down, +5% up), so a +5.1% improvement swapped is a
    # -4.85% drop, inside it: the mirror holds where the ratio is beyond the threshold both ways
    if ab.status == Outcome.FAIL:
        assert ba.status == Outcome.IMPROVED
    if ab.status == Outcome.IMPROVED and ab.ratio > 1 / 0.95:
        assert ba.status == Outcome.FAIL


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.floats(1, 200, allow_nan=False), min_size=MIN_PAIRS, max_size=30))
def test_identical_builds_always_pass(base):
    d = decide_ratio(base, list(base))
    assert d.status == Outcome.PASS and d.ratio == 1.0 and d.p_value == 1.0

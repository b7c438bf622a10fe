"""The precision statistics behind repetitions: auto, the report's quality fields and compare."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from specbench.base.stats import summarize
from specbench.results.precision import outliers, stratified


def test_one_group_is_the_ordinary_t_interval():
    values = [50.0, 52.0, 49.0, 51.5]
    s = summarize(values)
    p = stratified([values])
    assert p.mean == pytest.approx(s.mean)
    assert p.half_width == pytest.approx(s.ci_high - s.mean)
    assert p.relative == pytest.approx((s.ci_high - s.mean) / s.mean)


def test_prompt_to_prompt_spread_is_not_noise():
    # Two prompts at very different speeds, each repeated tightly: the mean is precise.
    p = stratified([[100.0, 101.0, 99.0], [50.0, 50.5, 49.5]])
    assert p.mean == pytest.approx(75.0)
    assert p.relative < 0.03
    # Pooled as if independent, the same numbers look hopelessly imprecise.
    pooled = summarize([100.0, 101.0, 99.0, 50.0, 50.5, 49.5])
    assert (pooled.ci_high - pooled.mean) / pooled.mean > 0.3


def test_stratified_half_width_by_hand():
    a, b = [10.0, 12.0, 11.0], [20.0, 24.0]
    va, vb = sps.tvar(a) / 3, sps.tvar(b) / 2
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 1)
    expected = sps.t.ppf(0.975, df) * math.sqrt(va + vb) / 2
    p = stratified([a, b])
    assert p.half_width == pytest.approx(expected)
    assert p.n_min == 2


def test_undefined_with_a_single_repetition_and_exact_without_spread():
    assert stratified([[10.0], [11.0, 12.0]]).relative is None
    assert not stratified([[10.0], [11.0, 12.0]]).meets(0.5)
    assert stratified([[10.0, 10.0], [20.0, 20.0]]).relative == 0.0
    assert stratified([]).mean is None


def test_more_repetitions_of_the_same_spread_tighten_it():
    few = stratified([[48.0, 52.0, 50.0]])
    many = stratified([[48.0, 52.0, 50.0] * 4])
    assert many.relative < few.relative


def test_outliers_modified_z_score():
    assert outliers([50.0, 50.5, 49.8, 50.2, 31.0]) == [4]
    assert outliers([50.0, 50.5, 49.8, 50.2, 50.1]) == []
    assert outliers([50.0, 31.0]) == []  # too few to tell
    assert outliers([50.0, 50.0, 50.0, 20.0]) == []  # MAD 0: no scale to judge by

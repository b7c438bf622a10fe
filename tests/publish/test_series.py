"""The site's per-run summary: rates and ratios on the log scale, so an interval never goes below zero."""

from __future__ import annotations

import math

from specbench.publish.series import _centre, _summary


def test_a_noisy_speedup_keeps_positive_bounds_where_the_arithmetic_interval_would_not():
    reps = [0.3, 1.6, 0.5]  # three repetitions far apart: mean 0.8, arithmetic t bounds below zero
    mean, low, high = _summary(reps)
    assert low is not None and low < 0  # what the site showed before (0.87x [-0.36, 2.10])
    centre, low, high = _summary(reps, log=True)
    assert 0 < low < centre < high
    assert math.isclose(centre, (0.3 * 1.6 * 0.5) ** (1 / 3))


def test_one_repetition_has_no_interval_and_acceptance_stays_arithmetic():
    assert _summary([1.4], log=True) == (1.4, None, None)
    assert _centre([0.5, 0.7], log=False) == 0.6
    assert math.isclose(_centre([1.0, 4.0], log=True), 2.0)  # prompts weigh alike: the geometric mean

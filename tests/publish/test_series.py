"""The site's per-run point is the report's figure: a noisy speedup keeps positive bounds."""

from __future__ import annotations

import math

from specbench.analysis.figures import Value, figure
from specbench.publish.series import _centre


def test_a_noisy_speedup_keeps_positive_bounds_where_the_arithmetic_interval_would_not():
    reps = [0.3, 1.6, 0.5]  # three repetitions far apart: arithmetic t bounds of their mean go below zero
    fig = figure("speedup", [Value("p", r, x) for r, x in enumerate(reps)])
    assert fig.low is not None and 0 < fig.low < fig.value < fig.high
    assert math.isclose(fig.value, (0.3 * 1.6 * 0.5) ** (1 / 3))
    plain = figure("acceptance", [Value("p", r, x) for r, x in enumerate(reps)])
    assert plain.low is not None and plain.low < 0  # why a ratio is never summarised this way
    # issue 58: a t/s is averaged as a speedup is (so a row's t/s divide to its speedup)
    tps = figure("spec_tps", [Value("p", r, x) for r, x in enumerate(reps)])
    assert (tps.value, tps.low, tps.high) == (fig.value, fig.low, fig.high)


def test_one_repetition_has_no_interval_and_acceptance_stays_arithmetic():
    one = figure("speedup", [Value("a", 1, 1.4), Value("b", 1, 1.4)])
    assert (one.low, one.high, one.n) == (None, None, 1) and math.isclose(one.value, 1.4)
    assert _centre([0.5, 0.7], log=False) == 0.6
    assert math.isclose(_centre([1.0, 4.0], log=True), 2.0)  # prompts weigh alike: the geometric mean

"""The machine's curve (synthetic cells) as the speed model of the real cells beside it."""

from __future__ import annotations

import pytest

from specbench.analysis.cells import ReportRow, _use_curve
from specbench.analysis.speedmodel import curve_speedup


def test_curve_speedup_interpolates_within_the_measured_range_only():
    points = [(3.0, 1.4), (1.5, 0.8), (6.0, 2.0)]
    assert curve_speedup(points, 1.5) == 0.8 and curve_speedup(points, 6.0) == 2.0
    assert curve_speedup(points, 2.25) == pytest.approx(1.1)
    assert curve_speedup(points, 4.5) == pytest.approx(1.7)
    assert curve_speedup(points, 1.2) is None and curve_speedup(points, 6.5) is None
    assert curve_speedup([], 2.0) is None and curve_speedup([(2.0, 1.1)], 2.0) == 1.1


def _row(synth: float | None, accept_len: float | None, speedup: float, **kw) -> ReportRow:
    data = dict(
        run="r", category="all", target="t", draft="d", method="draft", draft_max=8, pair="p",
        baseline_tps=10.0, baseline_tps_sd=None, spec_tps=10.0 * speedup, spec_tps_sd=None,
        speedup=speedup, speedup_ci_low=None, speedup_ci_high=None, acceptance=None,
        tokens_per_pass=None, predicted_speedup=None, outputs_match=None, valid=True, n=1,
        synth_len=synth, synthetic=synth is not None, accept_len=accept_len, runner="server",
    )  # fmt: skip
    return ReportRow(**{**data, **kw})


def test_real_rows_read_their_model_speedup_off_the_synthetic_curve_of_their_setting():
    curve = [_row(1.5, 1.5, 0.7), _row(3.0, 3.1, 1.3), _row(6.0, 5.9, 2.0)]
    real = _row(None, 2.3, 0.9)
    other = _row(None, 2.3, 0.9, draft_max=4)  # another draft length: no curve of its own
    process = _row(None, None, 1.0, tokens_per_pass=4.0)  # no counters: tokens per pass instead
    _use_curve([*curve, real, other, process])
    assert real.model_speedup == pytest.approx(0.7 + 0.6 * 0.8 / 1.6)
    assert "synthetic curve (3 points, acceptance length 1.50-5.90)" in real.model_calibration
    assert process.model_speedup == pytest.approx(1.3 + 0.7 * 0.9 / 2.8)
    assert other.model_speedup is None and all(r.model_speedup is None for r in curve)

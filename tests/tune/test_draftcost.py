"""The cost curve and the break-even acceptance, on set pass costs."""

from __future__ import annotations

import pytest

from specbench.analysis.speedmodel import expected_tokens, model_speedup
from specbench.results.calibration import PassCosts
from specbench.tune.draftcost import CurvePoint, alpha_for_speedup, break_even, fit_curve, free_draft


def _costs(name: str, decode_ms: float, slope: float = 0.25) -> PassCosts:
    d = decode_ms / 1e3
    return PassCosts(model=name, decode_s=d, pass_s={k: d * (1 + slope * (k - 1)) for k in (1, 2, 5, 9, 17)})


def _point(name: str, mb: float, ms: float) -> CurvePoint:
    return CurvePoint(name=name, sha256=name, bytes_per_token=int(mb * 1e6), costs=_costs(name, ms))


def test_a_line_is_recovered_with_no_error():
    curve = fit_curve([_point(f"m{i}", mb, 2 + 0.1 * mb) for i, mb in enumerate((10, 100, 500))])
    assert curve.a == pytest.approx(2e-3) and curve.b * 1e6 == pytest.approx(0.1e-3)
    assert curve.rel_error == pytest.approx(0, abs=1e-9)
    est = curve.estimate(200_000_000)
    assert est.decode_s == pytest.approx(22e-3) and est.low == pytest.approx(est.high)
    assert curve.pass_costs("x", 0.01).cost(9) == pytest.approx(0.01 * 3)  # the models' median ratio


def test_leave_one_out_error_is_the_range():
    curve = fit_curve([_point("a", 10, 3), _point("b", 100, 12), _point("c", 500, 40), _point("d", 300, 40)])
    assert curve.rel_error == max(abs(e) for e in curve.errors.values()) > 0.1
    est = curve.estimate(300_000_000)
    assert est.low < est.decode_s < est.high
    assert est.high / est.decode_s == pytest.approx(1 + curve.rel_error)


def test_two_points_fit_but_their_error_is_not_known():
    curve = fit_curve([_point("a", 10, 3), _point("b", 100, 12)])
    assert curve.rel_error is None and curve.estimate(50_000_000).low is None
    assert fit_curve([]) is None
    one = fit_curve([_point("a", 100, 10)])
    assert one.a == 0 and one.estimate(200_000_000).decode_s == pytest.approx(0.02)  # through the origin


def test_break_even_acceptance_is_where_the_model_crosses_one():
    target, draft = _costs("t", 20), _costs("d", 2)
    for g in (1, 4, 8):
        alpha = alpha_for_speedup(target, draft, g, 1.0)
        assert 0 < alpha < 1
        assert model_speedup(target, draft, g, expected_tokens(alpha, g)) == pytest.approx(1.0, abs=1e-6)
        goal = alpha_for_speedup(target, draft, g, 1.5)
        assert goal is None or goal > alpha  # None: not even full acceptance reaches 1.5x at this g
    best = break_even(target, draft, max_draft=16)
    per_g = [alpha_for_speedup(target, draft, g, 1.5) for g in range(1, 17)]
    assert best.alpha_target == min(a for a in per_g if a is not None)
    assert best.ceiling == pytest.approx(model_speedup(target, draft, best.g, best.g + 1.0))


def test_a_draft_as_costly_as_the_target_never_pays_and_a_free_one_always_can():
    target = _costs("t", 20)
    same = break_even(target, _costs("d", 20), max_draft=8)
    assert same.alpha_break_even is None and same.alpha_target is None and same.ceiling < 1
    free = break_even(target, free_draft("ngram-simple"), max_draft=8)
    assert free.alpha_break_even is not None and free.alpha_break_even < 0.5
    assert free.alpha_break_even < break_even(target, _costs("d", 2), max_draft=8).alpha_break_even


def test_a_noisy_fit_never_prices_a_model_below_zero():
    """Measured on a busy machine (the real numbers of a loaded 2-core VM): the least-squares line
    would start at -460 ms; a cost is never negative, so the line goes through the origin."""
    curve = fit_curve(
        [_point("f32", 538, 1663), _point("q4", 97, 91.5), _point("q8", 143, 105.8), _point("f16", 269, 502)]
    )
    assert curve.a == 0 and curve.b > 0
    assert all(curve.estimate(int(mb * 1e6)).decode_s > 0 for mb in (1, 50, 100))
    flat = fit_curve([_point("a", 100, 50), _point("b", 200, 40), _point("c", 300, 30)])
    assert flat.b == 0 and flat.a == pytest.approx(0.04)  # cost falling with size is noise: the mean

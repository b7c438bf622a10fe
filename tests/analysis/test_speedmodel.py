"""The calibrated speed model on constructed pass costs: its shape, not its numbers."""

import pytest

from specbench.analysis.speedmodel import (
    Drafting,
    alpha_for,
    cell_model_speedup,
    diagnose,
    drafted_per_pass,
    expected_tokens,
    fit_alpha,
    fit_drafting,
    model_speedup,
)
from specbench.results.calibration import Calibration, PassCosts
from tests.helpers.passcosts import FLAT_GPU, FLAT_GPU_SD, ms


def costs(name: str, decode_ms: float, per_token_ms: float, ngl: int = 0) -> PassCosts:
    """A pass over k tokens costs decode + (k-1) * per_token (ms)."""
    return PassCosts(
        model=name,
        ngl=ngl,
        decode_s=decode_ms / 1e3,
        pass_s={k: (decode_ms + (k - 1) * per_token_ms) / 1e3 for k in (2, 3, 5, 9, 17, 33)},
    )


def test_pass_cost_interpolates_between_measured_sizes_and_extends_past_them():
    c = PassCosts(model="t", decode_s=0.010, pass_s={2: 0.020, 4: 0.030, 8: 0.040})
    assert c.cost(1) == 0.010
    assert c.cost(3) == pytest.approx(0.025)
    assert c.cost(6) == pytest.approx(0.035)
    assert c.cost(12) == pytest.approx(0.050)  # slope of the last two measured sizes


def test_expected_tokens_is_geometric_and_alpha_for_inverts_it():
    assert expected_tokens(0.0, 8) == 1.0
    assert expected_tokens(1.0, 8) == 9.0
    assert expected_tokens(0.5, 2) == pytest.approx(1.75)
    for a in (0.3, 0.7, 0.95):
        assert alpha_for(expected_tokens(a, 6), 6) == pytest.approx(a, abs=1e-6)
    assert fit_alpha([(4, expected_tokens(0.8, 4)), (16, expected_tokens(0.8, 16))]) == pytest.approx(
        0.8, abs=1e-6
    )
    assert fit_alpha([]) is None


def test_speedup_grows_with_acceptance_and_falls_with_draft_and_verification_cost():
    target, draft = costs("t", 20, 1), costs("d", 2, 0.2)
    by_tokens = [model_speedup(target, draft, 8, expected_tokens(a, 8)) for a in (0.2, 0.5, 0.8, 0.95)]
    assert by_tokens == sorted(by_tokens)
    by_draft = [model_speedup(target, costs("d", ms, 0.2), 8, 6.0) for ms in (1, 4, 10, 18)]
    assert by_draft == sorted(by_draft, reverse=True)
    by_verify = [model_speedup(costs("t", 20, per), draft, 8, 6.0) for per in (0.5, 2, 5, 10)]
    assert by_verify == sorted(by_verify, reverse=True)
    # a cheap draft that is always right on a target whose passes cost the same at any size: near g+1
    ideal = model_speedup(costs("t", 20, 0.0), costs("d", 0.01, 0.0), 4, 5.0)
    assert 4.9 < ideal <= 5.0


def test_per_token_overhead_from_the_baseline_lowers_the_prediction():
    target, draft = costs("t", 20, 1), costs("d", 2, 0.2)
    without = model_speedup(target, draft, 8, 6.0)
    slow_baseline = model_speedup(
        target, draft, 8, 6.0, baseline_tps=1 / 0.030
    )  # 10 ms per token outside passes
    assert slow_baseline < without


@pytest.mark.parametrize(
    ("target", "draft", "g", "tokens", "cause"),
    [
        (costs("t", 20, 0.1), costs("d", 18, 0.1), 4, 4.9, "draft's cost is close to the target's"),
        (costs("t", 20, 25), costs("d", 0.5, 0.1), 8, 8.9, "verification cost"),
        (costs("t", 20, 0.1), costs("d", 0.5, 0.01), 16, 1.05, "low acceptance"),
    ],
)
def test_no_gain_diagnosis_names_the_dominant_cause(target, draft, g, tokens, cause):
    assert model_speedup(target, draft, g, tokens) < 1.0
    assert cause in diagnose(target, draft, g, tokens, None)


def test_cell_model_speedup_needs_a_calibration_of_both_models():
    cal = Calibration(build="b", depth=300, models=[costs("t", 20, 1), costs("d", 2, 0.2)])
    assert cell_model_speedup(None, "t", 0, "d", 0, 8, 6.0, 40.0) is None
    assert cell_model_speedup(cal, "t", 0, None, None, None, 2.0, 40.0) is None  # n-gram cell
    assert cell_model_speedup(cal, "t", 0, "d", 99, 8, 6.0, 40.0) is None  # draft not calibrated at ngld 99
    assert cell_model_speedup(cal, "t", 0, "d", 0, 8, 6.0, 40.0) == pytest.approx(
        model_speedup(cal.models[0], cal.models[1], 8, 6.0, 40.0)
    )


def test_drafts_verified_per_step_follow_from_tokens_per_step_and_acceptance():
    # 5 tokens per step at acceptance 0.8: 4 accepted per step of 5 drafted
    assert drafted_per_pass(5.0, 0.8, 8, 0.5) == pytest.approx(5.0)
    assert drafted_per_pass(5.0, None, 8, 0.5) == 8.0 and drafted_per_pass(None, 0.8, 8, 0.5) == 8.0
    assert drafted_per_pass(9.0, 0.5, 8, 0.5) == 8.0  # never more than g
    assert drafted_per_pass(5.0, 0.8, 8, 0.0) == 8.0  # without p_min every draft is g long


def test_a_drafting_fit_recovers_acceptance_and_how_soon_p_min_stops_drafts():
    truth = Drafting(alpha=0.7, keep=0.6)
    points = [(g, truth.tokens(g), truth.drafted(g)) for g in (4, 8, 16)]
    fitted = fit_drafting(points)
    assert fitted.alpha == pytest.approx(0.7, abs=1e-6) and fitted.keep == pytest.approx(0.6, abs=1e-6)
    assert fitted.drafted(32) < 1 / (1 - 0.6) + 1e-9  # cut drafts saturate: longer draft_max adds little
    uncut = fit_drafting([(g, expected_tokens(0.7, g), float(g)) for g in (4, 8)])
    assert uncut.keep == 1.0 and uncut.drafted(8) == 8.0
    assert fit_drafting([]) is None


def test_a_cell_whose_drafts_p_min_cut_short_is_priced_by_the_drafts_it_verified():
    cal = Calibration(build="b", depth=300, models=[costs("t", 20, 1), costs("d", 4, 0.4)])
    full = cell_model_speedup(cal, "t", 0, "d", 0, 16, 3.0, None)
    cut = cell_model_speedup(cal, "t", 0, "d", 0, 16, 3.0, None, drafted=2.5)
    assert cut > full  # the same tokens per step for far less drafting and a smaller verify pass


def test_a_flat_gpu_calibration_gives_sane_predictions():
    """A GPU's flat passes, their readings scattered within the noise (1.22 ms over 6 tokens, 0.9024
    over 9): priced at their mean, verifying more tokens never looks cheaper, and the best draft
    length at a real acceptance is inside the range, not at its end."""
    target = ms(FLAT_GPU, FLAT_GPU_SD)
    draft = ms({k: v * 0.05 for k, v in FLAT_GPU.items()}, model="draft")  # 0.05 ms a decode
    # the same tokens per step: more drafting can only cost more (the raw 9-token reading would make
    # g=8 beat g=5: 3 more draft decodes, 0.15 ms, against a verification 0.32 ms cheaper)
    same = [model_speedup(target, draft, g, 5.0) for g in range(4, 9)]
    assert same == sorted(same, reverse=True)
    flat = sum(FLAT_GPU[k] for k in range(4, 10)) / 6
    level = ms({**FLAT_GPU, **dict.fromkeys(range(4, 10), flat)}, model="smol_f32")  # the mean itself
    assert model_speedup(target, draft, 6, 5.0) == pytest.approx(model_speedup(level, draft, 6, 5.0))
    by_g = {g: model_speedup(target, draft, g, expected_tokens(0.8, g)) for g in range(1, 33)}
    assert all(0 < s <= expected_tokens(0.8, g) for g, s in by_g.items())  # never above the tokens per step
    best = max(by_g, key=lambda g: by_g[g])
    assert 1 < best < 32 and by_g[best] > 2.0  # flat verification pays, and a finite g is best

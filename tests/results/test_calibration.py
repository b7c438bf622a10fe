"""Which calibration readings can be right: a pass cost that is flat within llama-bench's noise is
(priced at its mean), one that falls beyond it is not. Synthetic readings, in milliseconds."""

import pytest

from specbench.results.calibration import pooled
from tests.helpers.passcosts import FLAT_GPU, FLAT_GPU_SD, ms

GROWING = {1: 20.0, 2: 24.0, 3: 23.0, 6: 40.0, 7: 45.0, 9: 52.0}  # a CPU's; k=3 a little under k=2


def test_a_flat_cost_within_its_noise_is_accepted_and_priced_at_its_mean():
    costs = ms(FLAT_GPU, FLAT_GPU_SD)
    assert costs.impossible() is None
    flat = sum(FLAT_GPU[k] for k in range(4, 10)) / 6 / 1e3  # 4..9 pool: 4, 5 and 6 timed above 9
    assert [costs.cost(k) for k in range(4, 10)] == pytest.approx([flat] * 6)  # slope 0, the mean
    assert costs.cost(7.5) == pytest.approx(flat)  # between two pooled sizes: the same
    assert costs.cost(2) == costs.cost(3) == pytest.approx(1.00e-3)  # 2 and 3 pool too
    assert costs.cost(13) == pytest.approx(1.10e-3) and costs.cost(33) == pytest.approx(2.10e-3)
    ladder = [costs.cost(k) for k in range(2, 34)]
    assert ladder == sorted(ladder)  # never cheaper with more tokens
    assert costs.pass_s[6] == pytest.approx(1.22e-3)  # the readings themselves are kept as measured


def test_the_same_fall_is_refused_when_no_noise_was_measured():
    # one repetition (llama-bench's sd 0): only the fixed slack is left, and 0.9024 is below 75% of 1.22
    why = ms(FLAT_GPU).impossible()
    assert why is not None
    assert why.startswith("smol_f32: a pass over 9 tokens took 0.0009024 s, one over 6 took 0.00122 s")


def test_a_cost_that_falls_beyond_its_noise_is_refused_naming_the_two_passes():
    busy = {**FLAT_GPU, 6: 1.60}  # the 6-token pass timed while something else ran: 1.6 ms, sd 0.03
    why = ms(busy, FLAT_GPU_SD).impossible()
    assert why == (
        "smol_f32: a pass over 7 tokens took 0.001 s, one over 6 took 0.0016 s, "
        "a fall beyond the 0.00051 s their noise allows"
    )


def test_a_growing_cost_is_accepted_and_priced_as_measured():
    costs = ms(GROWING)
    assert costs.impossible() is None
    assert costs.cost(6) == GROWING[6] / 1e3 and costs.cost(9) == GROWING[9] / 1e3
    assert costs.cost(8) == pytest.approx((GROWING[7] + GROWING[9]) / 2 / 1e3)
    assert costs.cost(2) == costs.cost(3) == pytest.approx(23.5e-3)  # the small dip: its mean


@pytest.mark.parametrize(
    ("readings", "what"),
    [
        ({1: 1.0, 2: 0.0, 3: 1.1}, "a pass over 2 tokens took 0 s"),
        ({1: 1.0, 2: float("nan"), 3: 1.1}, "a pass over 2 tokens took nan s"),
        ({1: -1.0, 2: 1.0}, "a decode took -0.001 s"),
    ],
)
def test_a_pass_that_took_no_time_is_refused(readings, what):
    assert ms(readings).impossible() == f"smol_f32: {what}"


def test_pooling_replaces_each_falling_stretch_by_its_mean_and_keeps_the_rest():
    assert pooled([1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]
    assert pooled([1.0, 3.0, 2.0, 4.0]) == [1.0, 2.5, 2.5, 4.0]
    assert pooled([3.0, 2.0, 1.0]) == [2.0, 2.0, 2.0]
    assert pooled([1.0, 4.0, 2.0, 2.0, 5.0]) == pytest.approx([1.0, 8 / 3, 8 / 3, 8 / 3, 5.0])
    assert pooled([]) == []

"""The calibration cache: what it reuses, and what it refuses (costs that fall as k grows beyond
their noise)."""

import pytest

from specbench.results.calibration import Calibration, PassCosts
from specbench.tune.calibrate import CachedCosts, Calibrated, cached_costs, store


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))


def costs(pass_s: dict[int, float], model: str = "t", sd: dict[int, float] | None = None) -> PassCosts:
    return PassCosts(
        model=model, sha256="ab" * 32, decode_s=pass_s.get(1, 0.02), pass_s=pass_s, pass_sd=sd or {}
    )


def entry(pass_s: dict[int, float], depth: int = 300, at: str = "2026-11-23T10:00:00",
          sd: dict[int, float] | None = None) -> CachedCosts:  # fmt: skip
    return CachedCosts(build="b1", sha256="ab" * 32, threads=2, ngl=0, depth=depth, repetitions=2,
                       measured_at=at, costs=costs(pass_s, sd=sd))  # fmt: skip


GOOD = {1: 0.020, 2: 0.024, 3: 0.023, 6: 0.040, 7: 0.045}  # k=3 a little under k=2: llama-bench jitter
BAD = {1: 0.020, 2: 0.024, 6: 3.25, 7: 0.12}  # the busy-machine entry
# a GPU's flat passes (the H200's smol_f32: 1.22 ms over 6 tokens, 0.9024 ms over 9), sd over 2 repetitions
FLAT = {1: 1.0e-3, 2: 1.02e-3, 6: 1.22e-3, 9: 0.9024e-3, 17: 1.3e-3}
FLAT_SD = {1: 2e-5, 2: 2e-5, 6: 3e-5, 9: 2e-5, 17: 3e-5}


def test_costs_that_fall_as_k_grows_are_impossible_small_jitter_is_not():
    assert costs(GOOD).impossible() is None
    why = costs(BAD).impossible()
    assert why == (
        "t: a pass over 7 tokens took 0.12 s, one over 6 took 3.25 s, "
        "a fall beyond the 0.81 s their noise allows"
    )


def test_a_stored_entry_is_found_again_and_a_non_monotonic_one_is_not(tmp_path):
    store(entry(GOOD))
    hit = cached_costs("b1", "ab" * 32, 2, 0, 300)
    assert hit is not None and hit.costs.pass_s == GOOD
    assert cached_costs("b1", "ab" * 32, 4, 0, 300) is None  # other threads: another calibration
    store(entry(BAD))  # written by an older specbench: read back as missing, so it is measured again
    assert cached_costs("b1", "ab" * 32, 2, 0, 300) is None


def test_a_flat_gpu_entry_within_its_noise_is_found_again_with_its_noise():
    store(entry(FLAT, sd=FLAT_SD))
    hit = cached_costs("b1", "ab" * 32, 2, 0, 300)
    assert hit is not None and hit.costs.pass_s == FLAT and hit.costs.pass_sd == FLAT_SD
    store(entry(FLAT))  # the same readings with no noise measured (one repetition): measured again
    assert cached_costs("b1", "ab" * 32, 2, 0, 300) is None


def test_a_run_finds_the_entry_of_the_nearest_depth_within_the_tolerance():
    store(entry(GOOD, depth=300, at="2026-11-23T10:00:00"))
    store(entry(GOOD, depth=340, at="2026-11-23T11:00:00"))
    assert cached_costs("b1", "ab" * 32, 2, 0, 330) is None  # tune asks for its exact depth
    assert cached_costs("b1", "ab" * 32, 2, 0, 330, 0.25).depth == 340
    assert cached_costs("b1", "ab" * 32, 2, 0, 700, 0.25) is None  # twice as deep: not the same costs


def test_a_calibration_from_a_busy_or_impossible_measurement_is_not_cached():
    cal = Calibration(build="b1", depth=300, models=[costs(GOOD, "t"), costs(GOOD, "d")])
    assert Calibrated(cal).refusal([]) is None
    why = Calibrated(cal).refusal(["another benchmark is running (pid 7 llama-server)"])
    assert why is not None and "busy" in why and "llama-server" in why
    bad = Calibration(build="b1", depth=300, models=[costs(GOOD, "t"), costs(BAD, "d")])
    why = Calibrated(bad).refusal([])
    assert why is not None and "cannot be right" in why and "d:" in why and "quiet machine" in why
    gpu = Calibration(build="b1", depth=300, models=[costs(FLAT, "t", FLAT_SD), costs(GOOD, "d")])
    assert Calibrated(gpu).refusal([]) is None  # flat within its noise: cached

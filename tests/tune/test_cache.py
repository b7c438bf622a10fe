"""The calibration cache: what it reuses, and what it refuses (costs that fall as k grows)."""

import pytest

from specbench.results.calibration import Calibration, PassCosts
from specbench.tune.calibrate import CachedCosts, Calibrated, cached_costs, store
from specbench.tune.search import cache_refusal


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))


def costs(pass_s: dict[int, float], model: str = "t") -> PassCosts:
    return PassCosts(model=model, sha256="ab" * 32, decode_s=pass_s.get(1, 0.02), pass_s=pass_s)


def entry(pass_s: dict[int, float], depth: int = 300, at: str = "2026-11-23T10:00:00") -> CachedCosts:
    return CachedCosts(build="b1", sha256="ab" * 32, threads=2, ngl=0, depth=depth, repetitions=2,
                       measured_at=at, costs=costs(pass_s))  # fmt: skip


GOOD = {1: 0.020, 2: 0.024, 3: 0.023, 6: 0.040, 7: 0.045}  # k=3 a little under k=2: llama-bench jitter
BAD = {1: 0.020, 2: 0.024, 6: 3.25, 7: 0.12}  # the busy-machine entry


def test_costs_that_fall_as_k_grows_are_not_monotonic_small_jitter_is():
    assert costs(GOOD).not_monotonic() is None
    why = costs(BAD).not_monotonic()
    assert why == "t: a pass over 7 tokens took 0.12 s, one over 6 took 3.25 s"


def test_a_stored_entry_is_found_again_and_a_non_monotonic_one_is_not(tmp_path):
    store(entry(GOOD))
    hit = cached_costs("b1", "ab" * 32, 2, 0, 300)
    assert hit is not None and hit.costs.pass_s == GOOD
    assert cached_costs("b1", "ab" * 32, 4, 0, 300) is None  # other threads: another calibration
    store(entry(BAD))  # written by an older specbench: read back as missing, so it is measured again
    assert cached_costs("b1", "ab" * 32, 2, 0, 300) is None


def test_a_run_finds_the_entry_of_the_nearest_depth_within_the_tolerance():
    store(entry(GOOD, depth=300, at="2026-11-23T10:00:00"))
    store(entry(GOOD, depth=340, at="2026-11-23T11:00:00"))
    assert cached_costs("b1", "ab" * 32, 2, 0, 330) is None  # tune asks for its exact depth
    assert cached_costs("b1", "ab" * 32, 2, 0, 330, 0.25).depth == 340
    assert cached_costs("b1", "ab" * 32, 2, 0, 700, 0.25) is None  # twice as deep: not the same costs


def test_a_calibration_from_a_busy_or_non_monotonic_measurement_is_not_cached():
    cal = Calibration(build="b1", depth=300, models=[costs(GOOD, "t"), costs(GOOD, "d")])
    assert cache_refusal(Calibrated(cal), []) is None
    why = cache_refusal(Calibrated(cal), ["another benchmark is running (pid 7 llama-server)"])
    assert why is not None and "busy" in why and "llama-server" in why
    bad = Calibration(build="b1", depth=300, models=[costs(GOOD, "t"), costs(BAD, "d")])
    why = cache_refusal(Calibrated(bad), [])
    assert why is not None and "do not grow with k" in why and "d:" in why

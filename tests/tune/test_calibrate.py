"""Calibration runs the build's llama-bench on a model and reads its JSON: replayed (its recorded
JSON) in `make test`, the real one in `make test-integration`."""

import json
import subprocess

import pytest

from specbench.base.errors import RunError
from specbench.tune.calibrate import (
    calibrate,
    costs_from_entries,
    measure_model,
    parse_bench_json,
    pass_sizes,
    store,
)
from tests.fixtures.replay import recorded_build
from tests.helpers.realruns import threads


def test_pass_sizes_cover_one_to_g_plus_one_sparser_at_higher_levels():
    assert pass_sizes(4) == [1, 2, 3, 4, 5]
    levels = [pass_sizes(32, level) for level in range(4)]
    for ks in levels:
        assert ks[0] == 1 and ks[-1] == 33 and ks == sorted(set(ks)) and max(ks) == 33
    assert [len(ks) for ks in levels] == sorted((len(ks) for ks in levels), reverse=True)
    assert pass_sizes(32, 3) == [1, 2, 5, 33]


# integration tier (issue 60); its rule, replayed: the test below of the like name
@pytest.mark.slow
@pytest.mark.integration
def test_llama_bench_at_depth_gives_positive_pass_costs_that_grow_with_the_batch(llama_build, smol_q4):
    entry, cached = measure_model(
        llama_build, "q4", str(smol_q4.path), smol_q4.sha256,
        ks=[1, 2, 17], depth=64, threads=threads(), ngl=0, reps=1, use_cache=False,
    )  # fmt: skip
    costs = entry.costs
    assert not cached and entry.measured_at and entry.depth == 64
    assert costs.decode_s > 0
    assert set(costs.pass_s) == {1, 2, 17}
    assert all(v > 0 for v in costs.pass_s.values())
    assert costs.pass_s[17] > costs.pass_s[1]  # a pass over 17 tokens costs more than over one
    fit = costs.curve()  # the measured passes, any fall within the noise priced flat
    assert costs.cost(9) == pytest.approx(fit[2] + (fit[17] - fit[2]) * 7 / 15)
    # stored, the same measurement comes from the cache, under the name asked for, when it holds the k's
    store(entry)
    got = calibrate(llama_build, [("draft", str(smol_q4.path), smol_q4.sha256, 0)], max_draft=1, depth=64,
                    threads=threads(), reps=1)  # fmt: skip
    cal = got.calibration
    if costs.impossible() is not None:  # a busy machine timed a longer pass far below a shorter one
        assert got.fresh and cal.source == "measured"  # such an entry is never reused: measured again
        return
    assert not got.fresh and cal.source == "cache" and cal.measured_at == entry.measured_at
    assert cal.costs("draft", 0) is not None and cal.costs("draft", 0).pass_s == costs.pass_s


def test_output_that_is_not_llama_bench_json_is_a_clear_error():
    with pytest.raises(RunError, match="no valid JSON"):
        parse_bench_json("[{ broken")
    with pytest.raises(RunError, match="n_prompt/n_gen/avg_ns"):
        parse_bench_json('[{"n_prompt": 1}]')
    entries = parse_bench_json('noise\n[{"n_prompt": 4, "n_gen": 0, "n_depth": 10, "avg_ns": 2e6}]')
    assert entries[0].n_prompt == 4 and entries[0].avg_ns == 2e6


def test_llama_bench_noise_is_kept_so_a_flat_gpu_cost_is_judged_against_it():
    """llama-bench's stddev over its repetitions becomes each pass's noise: the H200's flat passes
    (1.22 ms over 6 tokens, 0.9024 ms over 9; synthetic JSON, two repetitions) are then right."""
    tests = [
        (1, 0, 1.00e6, 2e4),
        (6, 0, 1.22e6, 3e4),
        (9, 0, 0.9024e6, 2e4),
        (17, 0, 1.3e6, 3e4),
        (0, 16, 16e6, 1e5),
    ]
    text = json.dumps(
        [{"n_prompt": p, "n_gen": g, "n_depth": 300, "avg_ns": a, "stddev_ns": sd} for p, g, a, sd in tests]
    )
    costs = costs_from_entries("smol_f32", None, 99, parse_bench_json(text))
    assert costs.pass_sd == {1: 2e-5, 6: 3e-5, 9: 2e-5, 17: 3e-5} and costs.decode_s == 1e-3
    assert costs.impossible() is None
    assert costs.cost(6) == costs.cost(9) == pytest.approx((1.22e-3 + 0.9024e-3) / 2)  # flat: the mean
    quiet = json.dumps([{"n_prompt": p, "n_gen": g, "avg_ns": a} for p, g, a, _ in tests])  # no stddev
    assert costs_from_entries("smol_f32", None, 99, parse_bench_json(quiet)).impossible() is not None


# integration tier (issue 60); its rule, replayed: the test below of the like name
@pytest.mark.slow
@pytest.mark.integration
def test_calibration_stops_at_its_time_and_says_what_set_it(llama_build, smol_q4, monkeypatch, tmp_path):
    """tune gives llama-bench what the budget leaves it; past that it stops, naming the budget (not a
    timeout_s the config does not pass)."""
    from specbench.tune.calibrate import CalibrationTimeout

    monkeypatch.setenv("SPECBENCH_CALIBRATION", str(tmp_path / "cal"))  # nothing cached: it must measure
    with pytest.raises(CalibrationTimeout, match=r"ran past 0 s \(what --budget 9 leaves for calibration"):
        model = ("q4", str(smol_q4.path), smol_q4.sha256, 0)
        calibrate(llama_build, [model], max_draft=4, depth=64, threads=threads(), reps=1, timeout_s=0.05,
                  limit="what --budget 9 leaves for calibration")  # fmt: skip


# Replayed (tests/fixtures/replay.py): the recorded llama-bench JSON of the pinned build at depth 64
# (tests/data/llama_bench/q4-d64.json, passes of 1-9 tokens) read by the same code, in milliseconds.


def test_replayed_llama_bench_gives_positive_pass_costs_that_grow_with_the_batch(
    replay, tmp_path, monkeypatch
):
    monkeypatch.setenv("SPECBENCH_CALIBRATION", str(tmp_path / "cal"))
    build = recorded_build(None, None, tmp_path / "bin")
    entry, cached = measure_model(build, "q4", "/models/q4.gguf", "0" * 64, ks=[1, 2, 9], depth=64,
                                  threads=2, ngl=0, reps=1, use_cache=False)  # fmt: skip
    costs = entry.costs
    assert not cached and entry.measured_at and entry.depth == 64 and costs.decode_s > 0
    assert set(costs.pass_s) >= {1, 2, 9} and all(v > 0 for v in costs.pass_s.values())  # it timed 1-9
    assert costs.pass_s[9] > costs.pass_s[1]  # a pass over 9 tokens costs more than over one
    assert costs.cost(3) == costs.pass_s[3]  # a measured k where the passes grow: its measurement
    assert [costs.cost(k) for k in range(2, 10)] == sorted(costs.cost(k) for k in range(2, 10))  # never falls
    assert len(replay.bench_log) == 1 and "-d" in replay.bench_log[0]
    # this recording's 4- and 7-token passes (busy moments) cost far more than the 5- and 9-token
    # ones: never reused
    assert costs.impossible() is not None
    store(entry)
    args = dict(max_draft=1, depth=64, threads=2, reps=1)
    got = calibrate(build, [("draft", "/models/q4.gguf", "0" * 64, 0)], **args)
    assert got.fresh and got.calibration.source == "measured" and len(replay.bench_log) == 2
    # a monotonic measurement, stored, comes from the cache under the name asked for, not run again
    steady = {k: costs.pass_s[1] * (1 + k / 10) for k in costs.pass_s}
    entry = entry.model_copy(update={"costs": costs.model_copy(update={"pass_s": steady})})
    assert entry.costs.impossible() is None
    store(entry)
    got = calibrate(build, [("draft", "/models/q4.gguf", "0" * 64, 0)], **args)
    cal = got.calibration
    assert not got.fresh and cal.source == "cache" and cal.measured_at == entry.measured_at
    assert cal.costs("draft", 0).pass_s == steady and len(replay.bench_log) == 2


def test_a_replayed_llama_bench_past_its_time_stops_calibration_naming_what_set_it(
    replay, tmp_path, monkeypatch
):
    """tune gives llama-bench what the budget leaves it; past that it stops, naming the budget (not a
    timeout_s the config does not pass)."""
    from specbench.tune import calibrate as calibration

    def hung(argv, timeout=None, **kwargs):
        raise subprocess.TimeoutExpired(argv, timeout)

    monkeypatch.setattr(calibration.subprocess, "run", hung)
    monkeypatch.setenv("SPECBENCH_CALIBRATION", str(tmp_path / "cal"))  # nothing cached: it must measure
    build = recorded_build(None, None, tmp_path / "bin")
    with pytest.raises(
        calibration.CalibrationTimeout, match=r"ran past 0 s \(what --budget 9 leaves for calib"
    ):
        calibrate(build, [("q4", "/models/q4.gguf", "0" * 64, 0)], max_draft=4, depth=64, threads=2, reps=1,
                  timeout_s=0.05, limit="what --budget 9 leaves for calibration")  # fmt: skip

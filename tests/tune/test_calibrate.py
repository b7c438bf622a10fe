"""Calibration runs the build's real llama-bench on a real model and reads its JSON."""

import pytest

from specbench.errors import RunError
from specbench.tune.calibrate import calibrate, measure_model, parse_bench_json, pass_sizes

pytestmark = pytest.mark.slow


def test_pass_sizes_cover_one_to_g_plus_one():
    assert pass_sizes(4) == [1, 2, 3, 4, 5]
    ks = pass_sizes(32)
    assert ks[0] == 1 and ks[-1] == 33 and ks == sorted(set(ks))


def test_llama_bench_at_depth_gives_positive_pass_costs_that_grow_with_the_batch(llama_build, smol_q4):
    costs = measure_model(
        llama_build, "q4", str(smol_q4.path), smol_q4.sha256,
        ks=[1, 2, 17], depth=64, threads=2, ngl=0, reps=1, use_cache=False,
    )  # fmt: skip
    assert costs.decode_s > 0
    assert set(costs.pass_s) == {1, 2, 17}
    assert all(v > 0 for v in costs.pass_s.values())
    assert costs.pass_s[17] > costs.pass_s[1]  # a pass over 17 tokens costs more than over one
    assert costs.cost(9) == pytest.approx(costs.pass_s[2] + (costs.pass_s[17] - costs.pass_s[2]) * 7 / 15)
    # the same measurement again comes from the cache, under the name asked for
    cal = calibrate(llama_build, [("draft", str(smol_q4.path), smol_q4.sha256, 0)], max_draft=1, depth=64,
                    threads=2, reps=1)  # fmt: skip
    assert cal.costs("draft", 0) is not None and cal.depth == 64


def test_output_that_is_not_llama_bench_json_is_a_clear_error():
    with pytest.raises(RunError, match="no valid JSON"):
        parse_bench_json("[{ broken")
    with pytest.raises(RunError, match="n_prompt/n_gen/avg_ns"):
        parse_bench_json('[{"n_prompt": 1}]')
    entries = parse_bench_json('noise\n[{"n_prompt": 4, "n_gen": 0, "n_depth": 10, "avg_ns": 2e6}]')
    assert entries[0].n_prompt == 4 and entries[0].avg_ns == 2e6

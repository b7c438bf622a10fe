"""The dry run on the real build and models (issue 43 items 2-4): a combination llama.cpp refuses is
left out with a note, a free argument the build's binaries lack is refused in one line, an axis
llama.cpp ignores for a dense model collapses to one value; and one real refusal, run, is quoted
in the sample's reason with llama.cpp's own line."""

from __future__ import annotations

import pytest

from specbench.results.samplelog import load_samples
from tests.fixtures.build import assert_one_line_error, cli
from tests.helpers.realruns import one_cell

pytestmark = pytest.mark.slow


def _dry(tmp_path, smol_f32, smol_q4, *sets: str):
    config = one_cell(tmp_path, smol_f32, smol_q4)
    args = [a for s in sets for a in ("--set", s)]
    return cli("run", str(config), "--dry-run", *args, env={"SPECBENCH_RESULTS": str(tmp_path / "r")})


def _commands(out: str) -> list[str]:
    return [line for line in out.splitlines() if line and not line.startswith("#")]


def test_a_refused_combination_is_left_out_with_llama_cpps_words(tmp_path, llama_build, smol_f32, smol_q4):
    result = _dry(tmp_path, smol_f32, smol_q4, "sweep.flash_attn=[off,on]", "sweep.cache_type_v=[f16,q8_0]")
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert "left out 1 cell(s) with flash_attn=off and a quantized cache_type_v" in out
    assert "quantized V cache requires flash_attn to be enabled" in out
    cmds = _commands(result.stdout)
    assert cmds and not any("-fa off" in c and "-ctv q8_0" in c for c in cmds)
    assert any("-fa on" in c and "-ctv q8_0" in c for c in cmds) and any("-fa off" in c for c in cmds)
    every = _dry(tmp_path, smol_f32, smol_q4, "flash_attn=off", "cache_type_v=q8_0")
    assert_one_line_error(every, "every cell has flash_attn=off and a quantized cache_type_v")


def test_a_free_argument_the_binary_lacks_is_refused_before_anything_runs(
    tmp_path, llama_build, smol_f32, smol_q4
):
    result = _dry(tmp_path, smol_f32, smol_q4, "args=[--mlock]")
    assert_one_line_error(result, "has no option --mlock", "load_mode")
    ok = _dry(tmp_path, smol_f32, smol_q4, "args=[--no-op-offload]")  # one every binary of the build has
    assert ok.returncode == 0, ok.stderr
    # --no-warmup is llama-completion's and llama-server's, not llama-speculative-simple's (the pinned
    # common/arg.cpp lists the examples each option is for; another one is refused at parse time)
    only_some = _dry(tmp_path, smol_f32, smol_q4, "args=[--no-warmup]")
    assert_one_line_error(only_some, "llama-speculative-simple of this build has no option --no-warmup")


def test_n_cpu_moe_on_a_dense_model_runs_each_cell_once(tmp_path, llama_build, smol_f32, smol_q4):
    result = _dry(tmp_path, smol_f32, smol_q4, "sweep.n_cpu_moe=[0,4]")
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert "n_cpu_moe on f32, a dense model (no MoE experts): llama.cpp ignores it; its values 0, 4" in out
    cmds = _commands(result.stdout)
    assert cmds and not any("-ncmoe 4" in c for c in cmds)


def test_a_real_refusal_is_quoted_in_the_reason(tmp_path, llama_build, smol_f32, smol_q4):
    """Run for real with the refused combination forced through free arguments (the plan cannot see
    them as the keys): the sample's reason is llama.cpp's own line, not `unable to create context`."""
    config = one_cell(tmp_path, smol_f32, smol_q4, repetitions=1, warmup=0)
    out = tmp_path / "run"
    sets = ["args=[-fa, 'off', -ctv, q8_0]", "generation.n_predict=4", "sweep.method=[ngram-simple]"]
    args = [a for s in sets for a in ("--set", s)]
    cli("run", str(config), *args, "--out", str(out), env={"SPECBENCH_RESULTS": str(tmp_path / "r")})
    samples = load_samples(out)
    said = "quantized V cache requires flash_attn to be enabled"
    exited = [s.invalid_reason for s in samples if s.exit_code == 1]  # llama-completion: exit 1
    assert exited and all(r == f"exit code 1: llama_init_from_model: {said}" for r in exited), exited
    # llama-speculative-simple dies of SIGSEGV after the error; the crash may lose the log's error
    # lines, and then the reason is the bare signal, never a debug line that mentions "cannot"
    crashed = [s.invalid_reason for s in samples if s.exit_code is None]
    assert all(
        r in ("killed by SIGSEGV", f"killed by SIGSEGV: llama_init_from_model: {said}") for r in crashed
    )

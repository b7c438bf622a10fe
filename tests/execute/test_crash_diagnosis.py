"""A failed sample's reason on any CPU (issue 43 item 11): a stand-in's segfault keeps its bare
reason on a CPU with AMX as without (the AMX diagnosis needs the build's self-test to have seen the
crash here, or llama.cpp's AMX path in the log), and where the self-test did see it the same
segfault is named with its class and cure. The CPU's flags are set where the runner reads them
(the manifest's ``env.cpu_isa``), so both branches run on every machine."""

from __future__ import annotations

import pytest

from specbench.builder.buildinfo import SelfTest, TypeCheck, Workaround
from specbench.execute.runner import execute
from specbench.results.samplelog import load_samples
from tests.helpers.fakeruns import inv, manifest, process

AMX = ["amx_bf16", "amx_int8", "amx_tile", "avx2", "avx512f"]
PLAIN = ["avx2", "fma"]


def _run(tmp_path, env_info, cpu: list[str], selftest: SelfTest | None = None, off: bool = False) -> dict:
    run_dir = tmp_path / "run"
    man = manifest(run_dir, env_info.model_copy(update={"cpu_isa": cpu}))
    man.build = man.build.model_copy(update={"selftest": selftest, "workarounds_off": off})
    plan = [inv("segfault", prompt_id="segv"), inv("exit1", role="baseline", prompt_id="exit1")]
    execute(process(plan), run_dir, man)
    return {s.prompt_id: s.invalid_reason for s in load_samples(run_dir)}


@pytest.mark.parametrize("cpu", [PLAIN, AMX], ids=["no-amx", "amx"])
def test_a_stand_ins_crash_keeps_its_bare_reason_with_or_without_amx(tmp_path, env_info, cpu):
    reasons = _run(tmp_path, env_info, cpu)
    assert reasons["segv"] == "killed by SIGSEGV"
    assert reasons["exit1"] == "exit code 1: main: error: failed to load model 'missing.gguf'"


@pytest.mark.parametrize("cpu", [PLAIN, AMX], ids=["no-amx", "amx"])
def test_where_the_self_test_saw_the_crash_an_amx_cpu_names_its_class(tmp_path, env_info, cpu):
    st = SelfTest(
        fingerprint="x", machine="fake", checked_at="2026-11-26T00:00:00+00:00",
        checks=[TypeCheck(wtype="Q4_1", outcome="crashed", signal="SIGSEGV", workaround_outcome="ok")],
        workaround=Workaround(name="repack-off", flag="--no-repack", reason="the self-test crashed"),
    )  # fmt: skip
    reasons = _run(tmp_path, env_info, cpu, st, off=True)  # --no-workarounds: run as built
    if cpu is AMX:
        assert reasons["segv"].startswith("killed by SIGSEGV: probably llama.cpp's AMX repack crash")
        assert "--set repack=off" in reasons["segv"]
    else:  # no AMX: whatever the self-test saw, this is not that crash
        assert reasons["segv"] == "killed by SIGSEGV"
    assert reasons["exit1"].startswith("exit code 1: main: error")  # an exit code is no crash of that class

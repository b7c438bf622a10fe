"""Calibration runs llama-bench in the mode the self-test chose (issue 43 item 1): the AMX crash
needs an AMX CPU, so llama-bench is a stand-in (tests/fakebins/bench-repack-crash) that dies of
SIGSEGV unless it gets ``--repack 0``, probed by the real probe and driven through the real
calibration tune runs; the CPU's flags are set where specbench reads them (``envinfo.cpu_isa``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.base.errors import RunError
from specbench.builder.buildinfo import BuildInfo, SelfTest, TypeCheck, Workaround
from specbench.builder.probe import probe_binary
from specbench.machine import envinfo
from specbench.tune.calibrate import calibrate
from tests.helpers.realruns import threads

BENCH = Path(__file__).parents[1] / "fakebins" / "bench-repack-crash"
AMX_CPU = ["amx_bf16", "amx_int8", "amx_tile", "avx2", "avx512f"]
PLAIN_CPU = ["avx2", "fma"]


def crashing_build(workarounds_off: bool = False) -> BuildInfo:
    """A build whose self-test saw Q4_0 crash here and decode with repacking off (as on an AMX CPU)."""
    st = SelfTest(
        fingerprint="x",
        machine="fake",
        checked_at="2026-11-26T00:00:00+00:00",
        checks=[TypeCheck(wtype="Q4_0", outcome="crashed", signal="SIGSEGV", workaround_outcome="ok")],
        workaround=Workaround(name="repack-off", flag="--no-repack", reason="the self-test crashed"),
    )
    return BuildInfo(
        key="fake", source="fakebins", backend="cpu", cmake_args=[], bin_dir=str(BENCH.parent),
        binaries={"bench": probe_binary("bench", BENCH)}, selftest=st, workarounds_off=workarounds_off,
    )  # fmt: skip


def _calibrate(build: BuildInfo, options: list[str] = ()):
    models = [("t", "/m/t.gguf", None, 0, list(options)), ("d", "/m/d.gguf", None, 0, list(options))]
    return calibrate(build, models, max_draft=4, depth=64, threads=threads(), reps=1)


@pytest.fixture
def argv_log(tmp_path, monkeypatch) -> Path:
    log = tmp_path / "argv.log"
    monkeypatch.setenv("FAKEBIN_ARGV_LOG", str(log))
    return log


def test_llama_bench_gets_repack_0_when_the_self_test_chose_it(argv_log):
    got = _calibrate(crashing_build())
    cal = got.calibration
    assert [m.model for m in cal.models] == ["t", "d"] and len(got.fresh) == 2
    costs = cal.costs("t", 0)
    assert costs is not None and costs.pass_s[5] > costs.pass_s[1] > 0  # the stand-in's JSON, read
    calls = argv_log.read_text().splitlines()
    assert len(calls) == 2 and all(" --repack 0 " in f" {c} " for c in calls)


@pytest.mark.parametrize("cpu", [AMX_CPU, PLAIN_CPU])
def test_without_the_workaround_the_crash_is_named_with_its_class_and_cure(cpu, monkeypatch, argv_log):
    monkeypatch.setattr(envinfo, "cpu_isa", lambda: list(cpu))
    with pytest.raises(RunError) as exc:
        _calibrate(crashing_build(workarounds_off=True))
    message = str(exc.value)
    assert "--repack" not in argv_log.read_text()  # run as built
    assert message.startswith("llama-bench on t failed: killed by SIGSEGV: ") and "\n" not in message
    if (
        cpu is AMX_CPU
    ):  # the self-test recorded the crash here: the class and its cure, llama-bench's included
        assert "AMX repack crash" in message and "--set repack=off" in message
    else:  # no AMX: not blamed on it; llama-bench's last line instead
        assert "AMX" not in message and message.endswith(
            "load_backend: loaded CPU backend from libggml-cpu.so"
        )


def test_a_config_that_chooses_repacking_wins_over_the_self_test(argv_log):
    """``repack: on`` in the config asks for the repacked path: llama-bench gets that, not the workaround."""
    with pytest.raises(RunError, match="killed by SIGSEGV"):
        _calibrate(crashing_build(), options=["--repack", "1"])
    assert all(c.count("--repack") == 1 and "--repack 1" in c for c in argv_log.read_text().splitlines())

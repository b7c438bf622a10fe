"""The build self-test on the real build (issue 31): a few tokens of each weight type decoded on
this machine, recorded in build.json, re-run where the CPU or GPUs differ; a type that crashes and
decodes with repacking off gives the build a workaround that every invocation then carries.

The AMX crash cannot happen on a CPU without AMX, so its stand-in is the real binary behind a
wrapper that dies of SIGSEGV on a Q4_1 model unless ``--no-repack`` is passed (what the pinned
llama.cpp does on an AMX machine); everything else (probe, quantize, decode, plan, run, report) is
real. One test runs the real thing where the CPU has AMX, and is skipped elsewhere. Each speculative
program is run once with a draft model (issue 59): stand-ins of tests/fakebins for its record."""

from __future__ import annotations

import json

import pytest

from specbench.builder import selftest
from specbench.builder.builder import checked
from specbench.builder.buildinfo import BuildInfo
from specbench.builder.buildplan import BUILD_JSON, build_dir_for, build_key
from specbench.machine import envinfo
from tests.fixtures.build import cli_process as cli
from tests.helpers.fakeruns import FAKEBINS
from tests.helpers.realruns import crashing_on_q4_1
from tests.helpers.trees import IK_PROGRAMS, pinned_build, tree_build

slow = pytest.mark.slow

HAS_AMX = "amx_int8" in envinfo.cpu_isa()


@slow
def test_the_build_records_its_self_test_and_the_cli_prints_it(llama_build):
    st = llama_build.selftest
    assert st is not None and st.fingerprint == envinfo.fingerprint(envinfo.cpu_isa(), envinfo.gpus())
    assert [c.wtype for c in st.checks] == list(selftest.WEIGHT_TYPES)
    assert st.speculative and {c.outcome for c in st.speculative.values()} == {"ok"}  # both programs ran
    if not HAS_AMX:
        assert all(c.outcome == "ok" for c in st.checks), st.summary()
        assert st.workaround is None
    on_disk = json.loads((build_dir_for(llama_build.key) / BUILD_JSON).read_text())
    assert [c["wtype"] for c in on_disk["selftest"]["checks"]] == list(selftest.WEIGHT_TYPES)
    assert {"outcome", "signal", "rc", "reason"} <= set(on_disk["selftest"]["checks"][0])
    for p in ("F32", *selftest.WEIGHT_TYPES):  # the tiny models are cached for the next check
        assert (selftest.tiny_models_dir() / f"tiny-{p}.gguf").is_file()
    built = cli("build", "--backend", "cpu", env={"COLUMNS": "200"})
    assert built.returncode == 0, built.stderr[-2000:]
    assert f"self-test ({st.machine}" in built.stdout and "Q4_K " in built.stdout
    shown = cli("env", env={"COLUMNS": "200"})
    assert shown.returncode == 0 and "self-test (" in shown.stdout


@slow
def test_a_cached_build_is_checked_again_on_another_machine_only(tmp_path, llama_build):
    info = llama_build.model_copy(deep=True)
    info.selftest = info.selftest.model_copy(update={"fingerprint": "another-machine", "checked_at": "then"})
    path = tmp_path / BUILD_JSON
    info.save(path)
    again = checked(BuildInfo.load(path), path)
    assert again.selftest.fingerprint == envinfo.fingerprint(envinfo.cpu_isa(), envinfo.gpus())
    assert again.selftest.checked_at != "then"
    assert BuildInfo.load(path).selftest.checked_at == again.selftest.checked_at  # written back
    assert checked(BuildInfo.load(path), path).selftest.checked_at == again.selftest.checked_at  # not re-run


def test_native_build_keys_carry_the_cpu_instruction_sets():
    args = ["-DCMAKE_BUILD_TYPE=Release"]
    assert build_key("a" * 40, "cpu", args, isa=["avx2"]) != build_key(
        "a" * 40, "cpu", args, isa=["avx2", "amx"]
    )
    portable = [*args, "-DGGML_NATIVE=OFF"]
    assert build_key("a" * 40, "cpu", portable, isa=["avx2"]) == build_key(
        "a" * 40, "cpu", portable, isa=["amx"]
    )


@slow
def test_a_type_that_crashes_without_repacking_gets_the_workaround(tmp_path, llama_build):
    wrapped = crashing_on_q4_1(llama_build, tmp_path / "bin")
    st = selftest.run_selftest(wrapped)
    q4_1 = next(c for c in st.checks if c.wtype == "Q4_1")
    assert (q4_1.outcome, q4_1.signal, q4_1.rc, q4_1.workaround_outcome) == ("crashed", "SIGSEGV", None, "ok")
    # what this machine adds: the types the real build's own self-test saw crash here (on an AMX CPU,
    # the pinned llama.cpp's Q4_0, Q8_0, Q4_K...; none elsewhere), all cured the same way
    assert llama_build.selftest is not None
    expected = {"Q4_1", *llama_build.selftest.crashed}
    assert {c.wtype for c in st.checks if c.outcome != "ok"} == expected, st.summary()
    assert all(c.workaround_outcome == "ok" for c in st.checks if c.outcome == "crashed")
    assert (
        st.workaround is not None and st.workaround.flag == "--no-repack"
    )  # as the binary's --help spells it
    assert "Q4_1" in st.workaround.reason and "SIGSEGV" in st.workaround.reason


@slow
@pytest.mark.skipif(
    not HAS_AMX, reason="this CPU has no AMX (no amx_int8 in its flags): the crash cannot happen"
)
def test_on_an_amx_cpu_the_real_crash_is_worked_around(llama_build):
    st = selftest.run_selftest(llama_build)
    if st.crashed:  # the machine-dependent llama.cpp bug (issue 20824) showed: repacking off cures it
        assert st.workaround is not None and st.workaround.flag == "--no-repack"
        assert all(c.workaround_outcome == "ok" for c in st.checks if c.outcome == "crashed")
    else:
        assert st.workaround is None  # an AMX CPU where the bug does not show: nothing to work around


def test_each_speculative_program_runs_once_with_a_draft_model_and_a_crash_is_recorded(tmp_path, monkeypatch):
    """ik_llama.cpp 0.1.5's llama-speculative dies of SIGSEGV before its first draft, whatever the
    options: the self-test records it (signal and the log's last line) beside a program that runs."""
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))
    roles = {**IK_PROGRAMS, "speculative_simple": "llama-speculative-simple"}
    info = tree_build(tmp_path, roles, "ik-0.1.5-llama-speculative.txt")
    for role, stand_in in (
        ("completion", "plain"),
        ("speculative", "segfault"),
        ("speculative_simple", "plain"),
    ):
        info.binaries[role].path = str(FAKEBINS / stand_in)
    st = selftest.run_selftest(info, types=())
    assert st.speculative is not None and set(st.speculative) == {"speculative", "speculative_simple"}
    crash, ran = st.speculative["speculative"], st.speculative["speculative_simple"]
    assert (crash.outcome, crash.signal) == ("crashed", "SIGSEGV") and "loading model" in crash.reason
    assert ran.outcome == "ok" and "speculative crashed (SIGSEGV)" in st.summary()
    assert info.model_copy(update={"selftest": st}).spec_crash("speculative") == crash
    assert not selftest.needs_selftest(info.model_copy(update={"selftest": st}))
    # a record made before the self-test ran them is re-tested, never taken as a pass
    assert selftest.needs_selftest(
        info.model_copy(update={"selftest": st.model_copy(update={"speculative": None})})
    )


def test_the_draft_method_is_spelled_as_the_probe_found_it(tmp_path):
    """-md alone where --spec-type has no draft-simple (the fork), with it in the pinned build."""
    tiny = tmp_path / "tiny.gguf"
    ik = tree_build(tmp_path / "ik", IK_PROGRAMS, "ik-0.1.5-llama-speculative.txt").binaries["speculative"]
    argv = selftest.speculative_argv(ik, tiny, 0, [])
    assert argv[argv.index("-md") + 1] == str(tiny) and "--draft-max" in argv and "--spec-type" not in argv
    pin = pinned_build(tmp_path / "pin").binaries["speculative_simple"]
    argv = selftest.speculative_argv(pin, tiny, 0, ["--no-repack"])
    assert argv[-2:] == ["--spec-type", "draft-simple"] and "--spec-draft-n-max" in argv
    assert "--no-repack" in argv and argv[argv.index("-m") + 1] == str(tiny)

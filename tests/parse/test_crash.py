"""The crash classifier on recorded text: each known class named with its cure, from the exit
signal, the log and what is known about the machine (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.execute.outputs import failure_reason
from specbench.parse.crash import CrashFacts, classify, error_line, exit_status, first_line, last_line

LOGS = Path(__file__).parents[1] / "data" / "crash_logs"
PLAIN_CPU = frozenset({"avx2", "avx512f", "fma"})


def _amx_flags() -> frozenset[str]:
    words = (LOGS / "system-info.txt").read_text().split()
    return frozenset(w for w in words if w.startswith(("amx", "avx")))


@pytest.mark.parametrize("name", ["draft-alone-sigsegv.stderr", "warmup-speculative-sigsegv.stderr"])
def test_the_recorded_amx_crash_is_named_with_its_cure(name):
    text = (LOGS / name).read_text()
    found = classify(text, None, "SIGSEGV", CrashFacts(cpu_flags=_amx_flags(), selftest_crashed=("Q4_1",)))
    assert found is not None and found.kind == "amx-repack"
    assert "--set repack=off" in found.line and "--no-workarounds" in found.line
    assert "the self-test crashed on Q4_1" in found.evidence
    facts = CrashFacts(cpu_flags=_amx_flags(), selftest_crashed=("Q4_1",))
    reason = failure_reason(text, None, "SIGSEGV", facts)
    assert reason.startswith("killed by SIGSEGV: probably llama.cpp's AMX repack crash")
    assert "\n" not in reason


def test_an_amx_cpu_alone_does_not_make_a_segfault_the_amx_crash():
    """A stand-in's segfault (or any binary's own bug) on an AMX CPU is not llama.cpp's AMX crash:
    that needs the build's self-test to have crashed here, or llama.cpp's AMX path in the log."""
    stand_in = (Path(__file__).parents[1] / "fakebins" / "segfault").read_text()
    stand_in_log = "\n".join(ln.split('"')[1] for ln in stand_in.splitlines() if ln.startswith("echo"))
    recorded = (LOGS / "draft-alone-sigsegv.stderr").read_text()  # a real crash, its log cut short
    amx_only = CrashFacts(cpu_flags=_amx_flags())
    assert classify(stand_in_log, None, "SIGSEGV", amx_only) is None
    assert classify(recorded, None, "SIGSEGV", amx_only) is None  # no evidence beyond the CPU
    assert failure_reason(stand_in_log, None, "SIGSEGV", amx_only) == "killed by SIGSEGV"
    shows_amx = recorded + (LOGS / "system-info.txt").read_text().splitlines()[0] + "\n"
    found = classify(shows_amx, None, "SIGSEGV", amx_only)  # llama.cpp's system_info: AMX_INT8 = 1
    assert found is not None and found.kind == "amx-repack" and "AMX in the log" in found.evidence


def test_a_segfault_is_not_blamed_on_amx_without_amx_or_with_the_workaround_on():
    text = (LOGS / "draft-alone-sigsegv.stderr").read_text()
    assert classify(text, None, "SIGSEGV", CrashFacts(cpu_flags=PLAIN_CPU)) is None
    on = CrashFacts(cpu_flags=_amx_flags(), workaround_on=True)
    assert classify(text, None, "SIGSEGV", on) is None
    plain = failure_reason(text, None, "SIGSEGV", CrashFacts(cpu_flags=PLAIN_CPU))
    assert plain.startswith("killed by SIGSEGV") and "AMX" not in plain


def test_illegal_instruction_names_a_rebuild():
    found = classify("0.00.001 I llama_completion: llama backend init\n", None, "SIGILL")
    assert found is not None and found.kind == "sigill" and "specbench build --force" in found.line


@pytest.mark.parametrize(
    ("log", "kind", "cure"),
    [
        ("ggml_cuda_compute_forward: CUDA error: no kernel image is available for execution on the device\n"
         "  current device: 0", "gpu-arch", "CMAKE_CUDA_ARCHITECTURES"),
        ("ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime "
         "version\n", "gpu-driver", "update the driver"),
        ("ggml_cuda_init: failed to initialize CUDA: unknown error\n", "gpu-init", "--set ngl=0"),
        ("ggml_metal_init: error: failed to create command queue\n", "metal", "--backend cpu"),
        ("ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 9663676416\n"
         "llama_init_from_model: failed to initialize the context: out of memory\n", "oom", "ctx_size"),
        ("CUDA error: out of memory\n  current device: 0\n", "oom", "GPU layers"),
    ],
)  # fmt: skip
def test_gpu_backend_and_memory_failures_are_recognised_from_the_log(log, kind, cure):
    found = classify(log, 1, None)
    assert found is not None and found.kind == kind and cure in found.line
    assert "\n" not in found.line


def test_an_unknown_failure_keeps_the_generic_reason():
    assert classify("main: error: something else\n", 1, None) is None
    assert failure_reason("0.00.001.000 E main: error: something else\n", 1, None) == (
        "exit code 1: main: error: something else"
    )


REAL = Path(__file__).parents[1] / "logs" / "real"
REFUSED = "llama_init_from_model: quantized V cache requires flash_attn to be enabled"


@pytest.mark.parametrize(
    ("name", "code", "sig"),
    [
        ("completion-q4-ctv-q8-fa-off.stderr", 1, None),
        ("spec-simple-q4-ctv-q8-fa-off.stderr", None, "SIGSEGV"),
    ],
)
def test_a_real_refusal_is_quoted_with_llama_cpps_cause_not_what_failed_after_it(name, code, sig):
    """Recorded with the pinned build: llama.cpp logs the cause first, then `failed to create
    context` and `unable to create context`; the reason quotes the cause, on any CPU (an AMX CPU
    whose self-test crashed included: llama.cpp said why before it died)."""
    text = (REAL / name).read_text()
    how = f"killed by {sig}" if sig else f"exit code {code}"
    for facts in (
        CrashFacts(cpu_flags=PLAIN_CPU),
        CrashFacts(cpu_flags=_amx_flags(), selftest_crashed=("Q4_1",)),
    ):
        assert failure_reason(text, code, sig, facts) == f"{how}: {REFUSED}"
    assert error_line(text) == REFUSED


def test_error_lines_without_levels_skip_the_lines_that_only_say_what_failed():
    bench = (REAL / "bench-q4-ctv-q8-fa-off.stderr").read_text()  # llama-bench: fprintf, no cause given
    assert error_line(bench).startswith("llama_bench: error: failed to create context with model")
    cause = "llama_new_context_with_model: flash_attn requires f16 K cache"  # an older build's shape
    assert error_line(f"{cause}\nmain: error: unable to create context\n") == cause
    assert error_line("0.00.001.000 I all fine\n") is None


def test_a_leveled_log_that_lost_its_error_lines_says_no_cause():
    """A crash loses what llama.cpp had not flushed: cut where its first error line was, the -lv 5 log
    says no cause, and a debug line that says "cannot" is not taken for one."""
    text = (REAL / "spec-simple-f32-ctv-q8-fa-off-lv5.stderr").read_text()
    assert error_line(text) == REFUSED
    lines = text.splitlines()
    cut = "\n".join(lines[: next(i for i, ln in enumerate(lines) if " E " in ln[:16])])
    assert "cannot be used with preferred buffer type" in cut  # a D line
    assert error_line(cut) is None
    assert failure_reason(cut, None, "SIGSEGV", CrashFacts(cpu_flags=PLAIN_CPU)) == "killed by SIGSEGV"


def test_exit_status_names_the_signal_of_a_negative_return_code():
    assert exit_status(1) == (1, None)
    assert exit_status(None) == (None, None)
    assert exit_status(-11) == (None, "SIGSEGV")
    assert exit_status(-200) == (None, "signal 200")  # no such signal: its number


def test_last_line_is_the_last_line_that_says_something():
    assert last_line("loading\n  error: bad magic  \n\n   \n") == "error: bad magic"
    assert last_line("\n \n") == ""


def test_first_line_is_the_first_line_that_says_something():
    assert first_line("\n  bad magic  \nat offset 4\n") == "bad magic"
    assert first_line("") == "" and first_line("\n \n") == ""

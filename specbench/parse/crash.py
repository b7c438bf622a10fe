"""Why a llama.cpp process died, named with its cure: one pure function over what is known.

A crash log often ends before llama.cpp printed anything useful (what a crash does not flush is
lost), so the log is read together with the exit signal and facts about the machine and the build:
the CPU's instruction-set flags and the crashes the build's self-test recorded here. Each class is
one line with the command or config key that cures it; ``None`` when nothing known matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from signal import Signals

AMX_FLAGS = frozenset({"amx_int8", "amx_tile", "amx_bf16"})  # llama.cpp issue 20824: AMX repack crash

_NO_KERNEL = re.compile(r"no kernel image is available for execution on the device", re.I)
_DRIVER = re.compile(
    r"CUDA driver version is insufficient for CUDA runtime version|cudaErrorInsufficientDriver"
    r"|forward compatibility was attempted on non supported HW|unsupported display driver / cuda driver",
    re.I,
)
_CUDA_INIT = re.compile(r"ggml_cuda_init: failed to initialize CUDA: ([^\n]*)|CUDA error: ([^\n]*)", re.I)
_HIP = re.compile(
    r"ggml_cuda_init: failed to initialize ROCm|hipErrorNoBinaryForGpu|HIP error: ([^\n]*)", re.I
)
_METAL = re.compile(
    r"ggml_metal\w*: error: ([^\n]*)|failed to (?:create|initialize) (?:the )?Metal[^\n]*"
    r"|MTLCompilerService[^\n]*|ggml_metal_init: [^\n]*failed[^\n]*",
    re.I,
)
# an allocation that failed (a context too large, a model past the GPU's memory), said before the
# lines that end the run ("failed to create context", "unable to create context", a crash)
_ALLOC = re.compile(r"^.*(?:insufficient memory|out of memory|cudaMalloc failed).*$", re.M | re.I)
_AMX_LOG = re.compile(r"ggml_backend_amx|AMX_INT8 = 1|\bAMX\b", re.I)
_PREFIX = re.compile(r"^(?:\d+\.\d{2}\.\d{3}\.\d{3} [A-Z] |\[\d+\] )")


@dataclass(frozen=True)
class CrashFacts:
    """What is known beyond the log: this CPU's flags, what the build's self-test saw crash here,
    and whether specbench's workaround (repacking off) was on for the run."""

    cpu_flags: frozenset[str] = frozenset()
    selftest_crashed: tuple[str, ...] = ()  # weight types that crashed in the self-test without a workaround
    workaround_on: bool = False
    backend: str = "cpu"


@dataclass(frozen=True)
class Diagnosis:
    """A known crash class: ``kind`` for code, ``line`` for people (cause; cure)."""

    kind: str  # amx-repack | sigill | oom | gpu-arch | gpu-driver | gpu-init | metal
    line: str
    evidence: list[str] = field(default_factory=list)


def _clean(line: str) -> str:
    return _PREFIX.sub("", line).strip()[:300]


def classify(
    stderr: str, exit_code: int | None, signal: str | None, facts: CrashFacts | None = None
) -> Diagnosis | None:
    """The known crash class of one failed run, or None (the caller keeps its generic reason)."""
    facts = facts or CrashFacts()
    text = stderr[-200_000:]
    if _NO_KERNEL.search(text):
        return Diagnosis(
            "gpu-arch",
            "the CUDA build has no kernels for this GPU's architecture (no kernel image): rebuild here "
            "with `specbench build --force --backend cuda` (or --cmake-arg -DCMAKE_CUDA_ARCHITECTURES=NN)",
        )
    if _DRIVER.search(text):
        return Diagnosis(
            "gpu-driver",
            "the NVIDIA driver is older than the CUDA runtime the build uses: update the driver, or build "
            "with an older CUDA toolkit (`specbench build --force`)",
        )
    if m := _ALLOC.search(text):
        return Diagnosis(
            "oom",
            f"out of memory: {_clean(m.group(0))}; lower generation.ctx_size, parallel or the GPU layers",
        )
    if m := _CUDA_INIT.search(text) or _HIP.search(text):
        said = _clean(next((g for g in m.groups() if g), m.group(0)))
        return Diagnosis(
            "gpu-init",
            f"the GPU backend did not start ({said}): check the driver with nvidia-smi, or run on the CPU "
            "(`--set ngl=0`, or `specbench build --backend cpu`)",
        )
    if m := _METAL.search(text):
        return Diagnosis(
            "metal",
            f"the Metal backend did not start ({_clean(m.group(0))}): run on the CPU (`--set ngl=0`, or "
            "`specbench build --backend cpu`)",
        )
    if signal == "SIGILL":
        return Diagnosis(
            "sigill",
            "illegal instruction: the binary was built for another CPU (a -march=native build from another "
            "machine); rebuild here with `specbench build --force`",
        )
    if signal in ("SIGSEGV", "SIGBUS", "SIGABRT") and AMX_FLAGS & facts.cpu_flags and not facts.workaround_on:
        return _amx(text, facts)
    return None


def exit_status(returncode: int | None) -> tuple[int | None, str | None]:
    """(exit code, signal name): a negative return code is the signal that ended the process."""
    if returncode is None or returncode >= 0:
        return returncode, None
    try:
        return None, Signals(-returncode).name  # SIGSEGV, as the crash classes name it
    except ValueError:
        return None, f"signal {-returncode}"


def last_line(text: str) -> str:
    """The log's last line that says something ("" when none does): what a failure said last."""
    return next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")


def first_line(text: str) -> str:
    """The first line that says something ("" when none does): an exception's message in one line
    (some carry none, where ``splitlines()[0]`` was an IndexError)."""
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


# llama.cpp's level prefix of an error line (pinned build: ``0.00.123.456 E ``)
_LEVEL_E = re.compile(r"^\d+\.\d{2}\.\d{3}\.\d{3} E ")
_LEVELED = re.compile(r"^\d+\.\d{2}\.\d{3}\.\d{3} [A-Z] ")
_ERRORISH = re.compile(
    r"\berror\b|abort|failed|requires|not supported|unsupported|invalid|cannot|unable|not found", re.I
)
# Lines that only say what failed because of an earlier line (the cause is said before them).
_CONSEQUENCE = re.compile(
    r"(?:failed to|unable to|cannot) (?:create|initiali[sz]e|init|load) (?:the )?(?:context|model)"
    r"|exiting due to|failed to initialize speculative|error: unable to load model",
    re.I,
)
TAIL_LINES = 400  # the end of a log: where a failure is said


def error_line(text: str) -> str | None:
    """llama.cpp's own line saying why a run failed, without its prefix; None when it said none.

    llama.cpp says the cause once, then what failed in consequence (``failed to create context``),
    so the cause is the first error-level line (``E``); a log with levels and none said none. A log
    without levels (older builds, llama-bench) gives the last line of its end that reads as an
    error, preferring one that is not such a consequence."""
    all_lines = text.splitlines()
    errors = [ln for ln in all_lines if _LEVEL_E.match(ln)]
    if errors:
        causes = [ln for ln in errors if not _CONSEQUENCE.search(ln)]
        return _clean((causes or errors)[0])
    if any(_LEVELED.match(ln) for ln in all_lines[:TAIL_LINES]):
        return None  # a log with levels that logged no error (a crash can lose the last lines)
    lines = [ln for ln in all_lines[-TAIL_LINES:] if ln.strip()]
    said = [ln for ln in lines if _ERRORISH.search(ln)]
    causes = [ln for ln in said if not _CONSEQUENCE.search(ln)]
    return _clean((causes or said)[-1]) if said else None


def _amx(text: str, facts: CrashFacts) -> Diagnosis | None:
    """The AMX repack crash, named only with evidence beyond the CPU: this build's self-test crashed
    here (``selftest_crashed``; a crash loses its unflushed AMX lines, so this is the usual one) or
    the log shows llama.cpp's AMX path. A log where llama.cpp logged an error first is that error's."""
    in_log = bool(_AMX_LOG.search(text))
    if not (facts.selftest_crashed or in_log):
        return None
    if not in_log and any(_LEVEL_E.match(ln) for ln in text.splitlines()):
        return None  # llama.cpp said why before it died (a refused option, then a crash in its cleanup)
    seen = ["this CPU has AMX", *(["AMX in the log"] if in_log else [])]
    if facts.selftest_crashed:
        seen.append(f"the self-test crashed on {', '.join(facts.selftest_crashed)}")
    return Diagnosis(
        "amx-repack",
        "probably llama.cpp's AMX repack crash (llama.cpp issue 20824; this CPU has AMX): turn repacking "
        "off with --set repack=off (every binary, llama-bench included), or run without --no-workarounds "
        "(specbench then turns it off where the self-test saw the crash); LLAMA_ARG_REPACK=false reaches "
        "every binary but llama-bench",
        seen,
    )

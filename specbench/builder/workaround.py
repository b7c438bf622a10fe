"""The self-test's workaround as each binary spells it: the one place every launch site asks.

A workaround is recorded by name (``repack-off``); llama-bench takes it as a test parameter
(``--repack 0``), every other binary as ``--no-repack``, so every launch site spells it through
``spelled`` and none can miss a binary.
"""

from __future__ import annotations

from specbench.base.llamaopts import REPACK
from specbench.builder.buildinfo import BinaryInfo, BuildInfo
from specbench.builder.options import OptionError, bench_argv
from specbench.parse.crash import CrashFacts

REPACK_OFF = "repack-off"
# Options that already choose repacking: an invocation that has one (a `repack` key or axis) is left alone.
REPACK_OPTIONS = frozenset((*REPACK.spellings, *REPACK.off))


def spelled(name: str, binary: BinaryInfo | None) -> list[str]:
    """The arguments that turn workaround ``name`` on in ``binary`` ([]: it has no way to)."""
    if binary is None or name != REPACK_OFF:
        return []
    if binary.role == "bench":  # llama-bench: a test parameter, --repack 0|1, no --no-repack
        try:
            return bench_argv(binary.flags.options, {REPACK.key: False})
        except OptionError:
            return []
    return [binary.flags.no_repack] if binary.flags.no_repack else []


def workaround_argv(info: BuildInfo | None, role: str) -> list[str]:
    """The build's active workaround as its ``role`` binary spells it ([]: none, or turned off)."""
    if info is None or info.workaround is None:
        return []
    return spelled(info.workaround.name, info.binaries.get(role))


def with_workaround(argv: list[str], info: BuildInfo | None, role: str) -> list[str]:
    """``argv`` with the build's workaround right after the binary path; unchanged when ``argv``
    already chooses repacking (the config's ``repack`` key wins over the self-test's choice)."""
    extra = workaround_argv(info, role)
    if not extra or REPACK_OPTIONS & set(argv):
        return list(argv)
    binary = info.binaries.get(role) if info is not None else None
    at = 1 + len(binary.command) if binary is not None else 1  # after `llama completion` too
    return [*argv[:at], *extra, *argv[at:]]


def crash_facts(
    info: BuildInfo | None, cpu_flags: frozenset[str] | list[str], argv: list[str] | None = None
) -> CrashFacts:
    """What ``specbench.parse.crash`` reads beside a crashed log of this build; repacking was off for
    the run when ``argv`` (its command line) says so, or without one when the build's workaround is on."""
    st = info.selftest if info is not None else None
    off = repack_off(argv) if argv is not None else info is not None and info.workaround is not None
    return CrashFacts(
        cpu_flags=frozenset(cpu_flags),
        selftest_crashed=tuple(st.crashed) if st else (),
        workaround_on=off,
        backend=info.backend if info is not None else "cpu",
    )


def repack_off(argv: list[str]) -> bool:
    """Whether a command line turns repacking off (``--no-repack``, ``-nr``, llama-bench's ``--repack 0``)."""
    for i, arg in enumerate(argv):
        if arg in REPACK.off:
            return True
        if arg in REPACK.spellings:
            return i + 1 < len(argv) and argv[i + 1] in ("0", "off", "false")
    return False

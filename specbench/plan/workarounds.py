"""A build's workaround on every invocation of it: the flag its self-test found to cure a crash.

The self-test (specbench.builder.selftest) records, per build and machine, a flag without which
llama.cpp crashes here (repacking off, for the AMX crash). Every invocation of that build, process or
server, warmup or measured, gets the flag as its binary spells it; ``workarounds: false`` (``run
--no-workarounds``) runs the build as built, to reproduce the crash.
"""

from __future__ import annotations

from collections.abc import Mapping

from specbench.builder.buildinfo import BuildInfo
from specbench.plan.invocation import Invocation

# Options that already choose repacking: a config that sets one (a `repack` sweep axis) is left alone.
_REPACK_OPTIONS = {"--repack", "--no-repack", "-nr"}


def with_workarounds(
    invocations: list[Invocation], builds: Mapping[str | None, BuildInfo]
) -> list[Invocation]:
    """``invocations`` with each build's workaround flag right after the binary path."""
    out = []
    for inv in invocations:
        info = builds.get(inv.build)
        wa = info.workaround if info is not None else None
        binary = info.binaries.get(inv.binary_role) if wa is not None and info is not None else None
        flag = binary.flags.no_repack if binary is not None else None
        if flag is None or _REPACK_OPTIONS & set(inv.argv):
            out.append(inv)
            continue
        out.append(inv.model_copy(update={"argv": [inv.argv[0], flag, *inv.argv[1:]]}))
    return out


def workaround_notes(builds: Mapping[str | None, BuildInfo]) -> list[str]:
    """One line per build that runs with a workaround (or that has one turned off)."""
    notes = []
    for label, info in builds.items():
        st = info.selftest
        if st is None or st.workaround is None:
            continue
        who = f"build {label}" if label else "this build"
        if info.workarounds_off:
            notes.append(
                f"workaround OFF for {who} (--no-workarounds): {st.workaround.reason}; expect the crash"
            )
        else:
            notes.append(
                f"workaround: {who} runs with {st.workaround.flag} on every invocation: "
                f"{st.workaround.reason}; --no-workarounds runs it as built"
            )
    return notes

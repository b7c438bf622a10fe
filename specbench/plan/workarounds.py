"""A build's workaround on every invocation of it: the flag its self-test found to cure a crash
(repacking off, for the AMX crash); ``workarounds: false`` runs the build as built."""

from __future__ import annotations

from collections.abc import Mapping

from specbench.builder.buildinfo import BuildInfo
from specbench.builder.workaround import with_workaround, workaround_argv
from specbench.plan.invocation import Invocation


def with_workarounds(
    invocations: list[Invocation], builds: Mapping[str | None, BuildInfo]
) -> list[Invocation]:
    """``invocations`` with each build's workaround right after the binary path, as it spells it."""
    out = []
    for inv in invocations:
        argv = with_workaround(list(inv.argv), builds.get(inv.build), inv.binary_role)
        out.append(inv if argv == list(inv.argv) else inv.model_copy(update={"argv": argv}))
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
            bench = " ".join(workaround_argv(info, "bench"))
            also = f" (llama-bench: {bench})" if bench and bench != st.workaround.flag else ""
            notes.append(
                f"workaround: {who} runs with {st.workaround.flag} on every invocation{also}: "
                f"{st.workaround.reason}; --no-workarounds runs it as built"
            )
    return notes

"""Whether two runs can be compared at all, and what differs between them that is only shown.

``compare`` refuses (exit 2) what would measure something other than the change: another machine, a
workaround on one side only, baseline t/s timed over another span, or no cell in common (named by
its first reason). What a comparison is usually for (llama.cpp commit, driver, threads) is listed.
"""

from __future__ import annotations

import re
from collections import defaultdict

from specbench.base.docs import docs_page
from specbench.gate.baseline import ROLES_KEPT, InputError, Side
from specbench.results.cell import RUN_FIELDS
from specbench.results.folder import MANIFEST
from specbench.results.manifest import CellKey, cell_key
from specbench.results.metrics import METRICS
from specbench.results.records import Sample


class NotComparable(InputError):
    """The two sides share no measurement (exit 2)."""


def natural_order(text: str) -> tuple:
    """Sort key that orders numbers by value: draft_max=4 before draft_max=16."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text))


def threads_text(samples: list[Sample]) -> str:
    """The threads a run's samples ran with, as compare shows them and history records them."""
    values = sorted({str(s.generation.threads) if s.generation.threads else "default" for s in samples})
    return ",".join(values) or "-"


def shown_differences(base: Side, cur: Side) -> list[str]:
    """What may differ between the sides and is shown, not matched on."""
    out = []
    pairs = [
        ("llama.cpp commit", base.facts.llama_cpp_commit, cur.facts.llama_cpp_commit),
        ("driver", ", ".join(base.facts.drivers) or None, ", ".join(cur.facts.drivers) or None),
        ("threads", threads_text(base.samples), threads_text(cur.samples)),
        ("specbench", base.facts.specbench_version, cur.facts.specbench_version),
    ]
    for name, b, c in pairs:
        if b != c:
            out.append(f"{name}: {b or 'unknown'} -> {c or 'unknown'}")
    vb, vc = base.facts.env_vars, cur.facts.env_vars
    for k in sorted(set(vb) | set(vc)):
        if vb.get(k) != vc.get(k):
            out.append(
                f"WARNING: environment {k}: {vb.get(k, 'unset')} -> {vc.get(k, 'unset')} "
                "(llama.cpp reads it: the sides may not have run the same options)"
            )
    return out


def check_machine(base: Side, cur: Side) -> None:
    """Numbers from two machines measure the machines, not the change: refuse (exit 2)."""
    mb, mc = base.facts.machine, cur.facts.machine
    for side, m, other in ((base, mb, mc), (cur, mc, mb)):
        if not m.cpu_model and other.cpu_model:  # a damaged manifest must not pass as the same machine
            raise NotComparable(
                f"not comparable: {side.ref} does not say which machine measured it (its {MANIFEST} "
                f"has no env.cpu_model; damaged?), so it cannot be checked against {other.describe()}"
            )
    for field in ("cpu_model", "backend"):
        vb, vc = getattr(mb, field), getattr(mc, field)
        if vb and vc and vb != vc:
            raise NotComparable(
                f"not comparable: different machine ({mb.describe()} vs {mc.describe()}); "
                f"compare with a baseline saved on this machine"
            )
    wb, wc = base.facts.workarounds, cur.facts.workarounds
    if wb != wc:  # repacking off on one side only: other code paths, as another machine would run
        raise NotComparable(
            f"not comparable: workaround on one side only ({', '.join(wb) or 'none'} vs "
            f"{', '.join(wc) or 'none'}): the builds ran different code paths; measure both sides alike "
            "(both with the self-test's workaround, or both with --no-workarounds)"
        )
    if sorted(mb.gpus) != sorted(mc.gpus):
        raise NotComparable(
            f"not comparable: different GPUs ({mb.describe()} vs {mc.describe()}); "
            f"compare with a baseline saved on this machine"
        )


# the model, how it ran (runner, llama-server's parallel), the generation settings, the prompts
_WHY_ORDER = ("target", *RUN_FIELDS, "n_predict", "temperature", "seed", "ctx_size", "top_k", "prompt_id")


def why_nothing(base: Side, cur: Side) -> str:
    """Name the first reason no cell matched: models, generation settings, prompts, settings."""

    def ids(side: Side, attr: str) -> set[str]:
        return {str(getattr(cell_key(s, side.facts), attr)) for s in side.samples if s.role in ROLES_KEPT}

    def names(side: Side) -> str:
        return ", ".join(sorted({s.model for s in side.samples}))

    for attr in _WHY_ORDER:
        b, c = ids(base, attr), ids(cur, attr)
        if b and c and not (b & c):
            if attr == "target":
                return f"different models ({names(base)} vs {names(cur)}: no sha256 in common)"
            what = {"runner": "runners", "prompt_id": "prompts"}.get(attr, attr)
            why = (
                ": a server's t/s is not a process's; compare runs of one runner" if attr == "runner" else ""
            )
            return f"different {what} ({', '.join(sorted(b))} vs {', '.join(sorted(c))}){why}"
    axes = differing_axes(base, cur)
    if axes:
        return f"no cell measured on both sides: the settings differ ({'; '.join(axes)})"
    return "no cell (method, settings, prompt) measured on both sides"


# The cell key's fields that are not settings: named by _WHY_ORDER above, or which side is which.
_NOT_AXES = ("role", "target", "draft", *_WHY_ORDER)


def differing_axes(base: Side, cur: Side) -> list[str]:
    """``axis: base values -> current values`` for every axis of the cell key that differs between the
    sides, the speculative cells' first, then the baselines'."""

    def axis_values(side: Side, role: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = defaultdict(set)
        for s in side.samples:
            if s.role == role:
                for name, v in cell_key(s, side.facts).model_dump().items():
                    if name not in _NOT_AXES:
                        out[name].add("unset" if v is None else str(v))
        return out

    found: dict[str, str] = {}
    for role in ("speculative", "baseline"):
        b, c = axis_values(base, role), axis_values(cur, role)
        if not b or not c:
            continue
        for name in CellKey.model_fields:
            if name in b and name in c and b[name] != c[name] and name not in found:
                before, after = (", ".join(sorted(side[name], key=natural_order)) for side in (b, c))
                found[name] = f"{name}: {before} -> {after}"
    return list(found.values())


def check_timing(base: Side, cur: Side, metrics: tuple[str, ...] | list[str]) -> None:
    """Refuse to compare a baseline t/s timed over the generation span with one timed inside
    llama.cpp's decode call only: they differ by the sampling and bookkeeping of every token."""
    mixed = [m for m in metrics if m in METRICS and METRICS[m].baseline_span]  # docs/timing.md
    if not mixed or base.facts.timing == cur.facts.timing:
        return
    old = base if base.facts.timing == "decode-only" else cur
    raise InputError(
        f"not comparable: {old.ref} times baseline t/s inside llama.cpp's decode call only (run folder "
        f"format before 2), the other over the whole generation span ({', '.join(mixed)} changed meaning); "
        "measure the baseline again with this specbench, or compare --metric spec_tps only "
        f"({docs_page('timing.md', 'run-folders-compare-history')})"
    )

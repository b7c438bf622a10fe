"""What llama.cpp would refuse or ignore, decided by the plan before anything runs.

From the option table, the --help or the self-test: values refused with flash attention off
(``drop_conflicts``), axes ignored on a dense model (``collapse_ignored``: they would measure one
thing twice), free arguments the binary lacks (``check_free_args``: the run would fail at its first
warmup), and a program the self-test saw crash with a draft model (``refuse_crashing``)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from specbench.base.docs import docs_page
from specbench.base.errors import ConfigError
from specbench.base.llamaopts import FLASH_ATTN, OPTIONS, Refusal, applies
from specbench.builder.buildinfo import BinaryInfo, BuildInfo
from specbench.plan.options import FLAG_KEYS
from specbench.results.cell import Cell


def _fa_off(cell: Cell, spec: BinaryInfo | None) -> bool:
    """Flash attention is off: asked so, or not asked where the binary's -fa is an old on-only
    switch (off by default; newer builds default to auto, which turns it on where it is needed)."""
    if cell.flash_attn == "off":
        return True
    flag = ((spec.flags.options or {}) if spec is not None else {}).get(FLASH_ATTN.key)
    return cell.flash_attn is None and flag is not None and not flag.takes_value


def _rates_of_draft_max(cells: list[Cell], notes: list[str]) -> list[Cell]:
    """Cells whose ``synth_rates`` count is not draft_max (llama.cpp refuses them) left out."""
    kept = [c for c in cells if c.synth_rates is None or len(c.synth_rates.split(",")) == (c.draft_max or 0)]
    said = (
        'synth_rates of another length than draft_max, which llama.cpp refuses ("synthetic '
        'acceptance rates must contain N values")'
    )
    if cells and not kept:
        raise ConfigError(f"every cell has {said}; give as many synth_rates as draft_max (one per position)")
    if len(kept) < len(cells):
        notes.append(
            f"left out {len(cells) - len(kept)} cell(s) with {said}: give as many rates as their "
            "draft_max to run them"
        )
    return kept


def drop_conflicts(cells: list[Cell], spec: BinaryInfo | None, notes: list[str]) -> list[Cell]:
    """``cells`` without the combinations llama.cpp refuses (noted); ConfigError when none is left."""
    cells = _rates_of_draft_max(cells, notes)
    kept: list[Cell] = []
    dropped: dict[Refusal, list[Cell]] = {}
    for c in cells:
        fa_off, has_draft = _fa_off(c, spec), c.draft is not None
        hits = (
            r
            for o in OPTIONS
            for r in o.refuses
            if applies(o, c.method, has_draft) and r.refused(getattr(c, o.key))
        )
        hit = next(hits, None) if fa_off else None
        kept.append(c) if hit is None else dropped.setdefault(hit, []).append(c)
    for r, gone in dropped.items():
        keys, cure = f"flash_attn=off and {r.what}", f"flash_attn: on (or auto), or {r.other}"
        if not kept:
            raise ConfigError(f'every cell has {keys}, which llama.cpp refuses ("{r.said}"); set {cure}')
        notes.append(
            f'left out {len(gone)} cell(s) with {keys}: llama.cpp refuses them ("{r.said}"); '
            f"set {cure} to run them"
        )
    return kept


# The options llama.cpp ignores on a dense model, by the cell's model they are read for.
MOE_ONLY = {o.key: "draft" if o.draft else "model" for o in OPTIONS if o.moe_only}


def collapse_ignored(cells: list[Cell], facts: Mapping[str, object], notes: list[str]) -> list[Cell]:
    """``cells`` with each axis ignored on a dense model at its first value (noted), deduplicated."""
    values: dict[tuple[str, str], list] = {}  # by axis and model: the values seen, the first kept
    out: dict[tuple, Cell] = {}  # by settings: the first cell with them
    for c in cells:
        update = {}
        for field, role in MOE_ONLY.items():
            name, value = getattr(c, role), getattr(c, field)
            fact = facts.get(name) if name else None
            if value is None or fact is None or bool(getattr(fact, "experts", 0)):
                continue
            seen = values.setdefault((field, name), [])
            if value not in seen:
                seen.append(value)
            update[field] = seen[0]
        cell = c.model_copy(update=update) if update else c
        out.setdefault(tuple(cell.model_dump().items()), cell)
    for (field, name), vals in values.items():
        said = f"{field} on {name}, a dense model (no MoE experts): llama.cpp ignores it"
        if len(vals) > 1:
            listed = ", ".join(map(str, vals))
            notes.append(
                f"{said}; its values {listed} collapse to {vals[0]} (the others would repeat its cells)"
            )
        elif vals[0]:
            notes.append(said)
    if len(out) < len(cells):
        notes.append(
            f"{len(cells) - len(out)} cell(s) not planned: the same settings as another once ignored axes "
            "collapse"
        )
    return list(out.values())


_NEGATIVE_NUMBER = re.compile(r"^-\d")


def check_free_args(args: list[str], binary: BinaryInfo, where: str) -> None:
    """Refuse an option in ``args`` that ``binary``'s probed ``--help`` does not list."""
    known = binary.flags.known
    if not known:
        return
    for arg in args:
        if not arg.startswith("-") or _NEGATIVE_NUMBER.match(arg) or arg == "-":
            continue
        name = arg.split("=", 1)[0]
        if name in known:
            continue
        # before -lm, load_mode was these two switches
        key = FLAG_KEYS.get(name) or {"--mlock": "load_mode: mlock", "--no-mmap": "load_mode: none"}.get(name)
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        cure = f"use the config key {key}" if key else f"did you mean {near[0]}?" if near else "remove it"
        raise ConfigError(
            f"{where}: {binary.name} of this build has no option {name} (its --help does not list it); "
            f"{cure} ({docs_page('llama-options.md', 'free-arguments-args-and-sweepargs')})"
        )


def refuse_crashing(build: BuildInfo, spec: BinaryInfo, cells: list[Cell], where: str = "") -> None:
    """Refuse draft-model cells on a program the self-test saw crash with a draft model (a fork's
    bug: ik_llama.cpp 0.1.5's llama-speculative, whatever the options); read from the build's
    record, never from the tree's name."""
    crash = build.spec_crash(spec.role)
    if crash is not None and any(c.draft is not None for c in cells):
        raise ConfigError(
            f"{where}{spec.name} of this build crashed when its self-test ran it with a draft model "
            f"({crash.reason}), so every process-runner sample with a draft would too: "
            f"{build.server_hint('whose speculative program runs')}"
        )

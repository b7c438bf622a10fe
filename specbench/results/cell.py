"""What makes a cell, declared once: one speculative setting on one target, on one llama.cpp build.

``Cell`` lists the axes in order; invocations and samples inherit them, and everything that tells
cells apart asks this module (sample keys, rows, identities, labels, the baseline rule). A llama.cpp
option is a field by its ``specbench.base.llamaopts`` entry alone; old folders load it at its default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from copy import copy
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, Field, create_model

from specbench.base.llamaopts import BY_KEY, METHOD, OPTION_NAMES, OPTIONS, TUNED
from specbench.base.methods import runs_draft_alone


def _fields(group: str) -> dict[str, Any]:
    """The cell fields of a group of the table's entries, in order (None: llama.cpp's default)."""
    return {
        o.key: (o.cell_type if o.cell_default is not None else o.cell_type | None,
                Field(default=o.cell_default, description=o.description))
        for o in OPTIONS if o.group == group
    }  # fmt: skip


class _Models(BaseModel):
    """The axes before the table's: which build and models a cell runs."""

    build: str | None = None  # llama.cpp build label (None: the run's one build)
    pair: str | None = None  # None for baseline/draft samples (shared across pairs)
    model: str  # the model that ran alone (baseline/draft), or the target (speculative)
    draft: str | None = None  # draft model name (speculative with a draft model)


# Then the table's axes, tuned options, runner and server axes, one field per entry.
if TYPE_CHECKING:  # made from the table at import (create_model); to the type checker:

    class _Axes(_Models):
        args: str | None = None
        runner: str = "process"

        def __getattr__(self, key: str) -> Any: ...  # an entry of the table

else:
    _Axes = create_model(
        "_Axes", __base__=_Models, **_fields("axis"), **_fields("option"),
        args=(str | None, Field(default=None, description="The name of a `sweep.args` set of arguments.")),
        runner=(str, Field(default="process", description="process (one llama.cpp process per sample) | "
                           "server (llama-server).")),
        **_fields("server"),
    )  # fmt: skip


class Cell(_Axes):
    """The axes of a cell, in order; a baseline or draft alone has method ``none`` and no pair."""

    shard: str | None = None  # "i/N" of a sharded sweep (specbench.plan.shards; None: not sharded)
    depth: int = 0  # tokens of context in front of the prompt: the KV cache's depth as generation starts


CELL_FIELDS: tuple[str, ...] = tuple(Cell.model_fields)


class LeftOut(BaseModel):
    """A planned speculative cell not run, and why (a draft whose context cannot hold the depth), so
    the report names it where it would have stood."""

    cell: Cell
    reason: str


# Synthetic acceptance (synth_len, synth_rates): a simulation, never compared and never the best.
SYNTH_FIELDS: tuple[str, ...] = tuple(o.key for o in OPTIONS if o.synthetic)


def is_synthetic(m: Any) -> bool:
    """Whether a cell (a measurement, a row, or a mapping of its fields) accepts drafts at random."""
    get = m.get if isinstance(m, Mapping) else (lambda f: getattr(m, f, None))
    return any(get(f) is not None for f in SYNTH_FIELDS)


# The llama.cpp options among the axes: the draft's own (``*_draft``), and the rest, which a model
# alone runs with too.
OPTION_FIELDS: tuple[str, ...] = (*OPTION_NAMES, "args")
DRAFT_OPTIONS: tuple[str, ...] = tuple(o.key for o in TUNED if o.scope == "draft")
SPEC_OPTIONS: tuple[str, ...] = tuple(  # the speculation's own (a baseline runs without them)
    o.key for o in TUNED if o.scope in ("spec", "draft_context", "lookup")
)
MODEL_OPTIONS: tuple[str, ...] = tuple(f for f in OPTION_FIELDS if f not in (*DRAFT_OPTIONS, *SPEC_OPTIONS))
# What a speculative cell shares with its baseline: target, build, GPU layers, options, runner, shard.
RUN_FIELDS = ("runner", *(o.key for o in OPTIONS if o.group == "server" and o.scope == "model"))  # how it ran
_SHARED = ("build", "model", *MODEL_OPTIONS, *RUN_FIELDS, "shard", "depth")
BASELINE_FIELDS = tuple(f for f in CELL_FIELDS if f in _SHARED or f in BY_KEY and BY_KEY[f].scope == "model")
MODEL_FIELDS = ("model", "draft")  # model names: identities across runs use their sha256 instead
RUN_LOCAL = ("pair", "shard")  # named by one config: identities across runs leave them out
# The first format's axes: history ids leave a later axis out at its default, so old ids hold.
FIRST_FIELDS = ("pair", *MODEL_FIELDS, *(o.key for o in OPTIONS if o.first))
SETTING_FIELDS = tuple(f for f in CELL_FIELDS if f not in (*RUN_LOCAL, *MODEL_FIELDS, METHOD.key))


def default(name: str) -> Any:
    return Cell.model_fields[name].default


# how a cell runs unless told: a stored history id leaves these out
RUN_DEFAULTS = {f: default(f) for f in RUN_FIELDS}


def values(m: Any, names: tuple[str, ...] = CELL_FIELDS) -> tuple:
    return tuple(getattr(m, f) for f in names)


def cell_of(m: Any) -> tuple:
    """A measurement's cell (its role and every axis): what a sample key is without prompt and repetition."""
    return (m.role, *values(m))


def sample_key(m: Any) -> tuple:
    """Identity of one invocation within a run (``--resume`` skips the recorded ones)."""
    return (*cell_of(m), m.prompt_id, m.repetition)


def baseline_of(m: Any) -> tuple:
    """The baseline a speculative cell is measured against; a baseline sample's own key, too."""
    return ("baseline", *values(m, BASELINE_FIELDS))


def draft_options(m: Any) -> dict[str, Any]:
    """The options a cell's draft model runs with alone: the shared ones, and its ``*_draft`` values
    in place of the target's (``cache_type_k`` = the cell's ``cache_type_k_draft``)."""
    return {f: getattr(m, f"{f}_draft" if f"{f}_draft" in DRAFT_OPTIONS else f) for f in MODEL_OPTIONS}


def draft_alone_of(m: Any) -> tuple | None:
    """The draft-alone runs a cell's cost ratio comes from (its draft at ngld, with the draft's
    options); None for a method whose draft cannot run alone."""
    if m.draft is None or not runs_draft_alone(str(m.method)):
        return None
    return ("draft", m.build, m.draft, m.ngld or 0, *draft_options(m).values(), m.shard, m.depth)


def alone_of(m: Any) -> tuple:
    """A baseline or draft-alone sample's key, as ``baseline_of`` / ``draft_alone_of`` name it."""
    if m.role == "draft":
        return ("draft", m.build, m.model, m.ngl or 0, *values(m, MODEL_OPTIONS), m.shard, m.depth)
    return baseline_of(m)


T = TypeVar("T")
K = TypeVar("K")


def group_by(items: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    """The items by ``key`` (``cell_of``, ``baseline_of``...), groups and items in the order first seen."""
    out: dict[K, list[T]] = {}
    for item in items:
        out.setdefault(key(item), []).append(item)
    return out


def draft_alone_cell(m: Any, build: str | None) -> Cell:
    """The draft model of cell ``m`` run alone on ``build``, at ngld, its options and the cell's depth."""
    return Cell(build=build, model=m.draft, ngl=m.ngld or 0, depth=m.depth, **draft_options(m))


def baseline_cell(m: Any) -> Cell:
    """The baseline of cell ``m`` as a cell of its own (its target, build, ngl and options)."""
    return Cell(**{f: getattr(m, f) for f in BASELINE_FIELDS if f not in RUN_FIELDS})


def cell_record(m: Any) -> dict[str, Any]:
    """A measurement's role and every axis it sets, llama.cpp options included (for the manifest)."""
    return {"role": m.role, **{f: v for f in CELL_FIELDS if (v := getattr(m, f)) is not None}}


def cell_dict(m: Any) -> dict[str, Any]:
    """The axes of ``m`` by name (to build an Invocation or a row from a cell)."""
    return {f: getattr(m, f) for f in CELL_FIELDS}


def label_parts(m: Any) -> list[str]:
    """``name=value`` for every setting axis away from its default, in axis order."""
    parts = []
    for name in SETTING_FIELDS:
        v = getattr(m, name)
        if v != default(name):
            parts.append(f"{name}={v:g}" if isinstance(v, float) else f"{name}={v}")
    return parts


def model_with_cell(
    name: str, doc: str, rename: dict[str, str] | None = None, skip: tuple[str, ...] = ()
) -> Any:
    """A pydantic base with every axis as a field (``rename``: e.g. model -> target), for report rows
    and identities."""
    rename = rename or {}
    fields: dict[str, Any] = {}
    for f, info in Cell.model_fields.items():
        if f not in skip:
            fields[rename.get(f, f)] = (info.annotation, copy(info))
    return create_model(name, __doc__=doc, **fields)

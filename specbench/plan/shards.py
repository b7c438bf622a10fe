"""Shards: one plan cut into N self-contained parts that a CI engine (a GitHub matrix, a Slurm
array) runs on separate machines, merged back into one run folder afterwards.

A cell travels with the baseline and draft-alone runs it is judged against (measured in every shard
that needs them). Cells go longest first to the shard whose estimated time grows least (LPT), ties
by name, so the same config always gives the same shards."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from specbench.base.errors import ConfigError
from specbench.base.formats import json_text
from specbench.plan.config import Config
from specbench.plan.invocation import Invocation, Plan
from specbench.results.cell import alone_of, baseline_of, cell_of, draft_alone_of, group_by, label_parts

# Without history, a run's time is guessed from its size (only the ratios between shards matter).
GUESS_TOKENS_PER_S = 50.0
GUESS_LOAD_S = 1.0
DRAFT_SPEED_FACTOR = 0.5  # a draft model alone runs about twice as fast as its target


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based). ``cells``: those its matrix entry dealt it (another
    machine's history would deal differently); None: dealt again from sizes."""

    index: int
    count: int
    cells: tuple[str, ...] | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``i/N`` with 1 <= i <= N."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m:
        raise ConfigError(f"--shard {text!r}: write it as i/N, e.g. --shard 2/3 (shard 2 of 3)")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ConfigError(f"--shard {text}: the shard number must be between 1 and {max(count, 1)}")
    return Shard(index, count)


def with_cells(shard: Shard, text: str | None) -> Shard:
    """``shard`` with the cells of its matrix entry (``--shard-cells``: the entry's ``cells`` as JSON)."""
    if text is None:
        return shard
    try:
        cells = json.loads(text)
    except ValueError:
        cells = None
    if not isinstance(cells, list) or not cells or not all(isinstance(c, str) for c in cells):
        raise ConfigError(
            "--shard-cells: give the matrix entry's cells as a JSON list of names, e.g. "
            "'[\"smol draft dmax=8\"]' (in a workflow: ${{ toJSON(matrix.cells) }})"
        )
    return Shard(shard.index, shard.count, tuple(cells))


def shard_from_env(env: dict[str, str] | None = None) -> Shard | None:
    """A Slurm array task's shard (its id counted from ``SLURM_ARRAY_TASK_MIN``), else None."""
    env = dict(os.environ if env is None else env)
    task, count = env.get("SLURM_ARRAY_TASK_ID"), env.get("SLURM_ARRAY_TASK_COUNT")
    if not task or not count:
        return None
    try:
        first = int(env.get("SLURM_ARRAY_TASK_MIN", "1"))
        return parse_shard(f"{int(task) - first + 1}/{int(count)}")
    except ValueError as exc:
        raise ConfigError(
            f"SLURM_ARRAY_TASK_ID={task} / SLURM_ARRAY_TASK_COUNT={count} do not name a shard; "
            "declare the array as --array=1-N, or pass --shard i/N"
        ) from exc


def cell_name(inv: Invocation) -> str:
    """A speculative cell's name in a shard list: pair, method and every setting off its default."""
    return " ".join([str(inv.pair), inv.method, *label_parts(inv)])


def config_hash(config_data: dict) -> str:
    """The identity of a whole plan: shards of different configs must not be merged."""
    text = json_text(config_data, None, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def guess_s(inv: Invocation) -> float:
    """An invocation's time from the plan's sizes (used when history does not know the cell)."""
    speed = GUESS_TOKENS_PER_S * (1 / DRAFT_SPEED_FACTOR if inv.role == "draft" else 1.0)
    return GUESS_LOAD_S + inv.generation.n_predict / speed


@dataclass
class ShardPlan:
    """One shard: its cells by name, its estimated time and whatever the config routes it to."""

    shard: Shard
    cells: list[str] = field(default_factory=list)
    est_s: float = 0.0
    runs_on: list[str] = field(default_factory=list)

    def matrix_entry(self) -> dict:
        entry: dict = {"shard": self.shard.label, "cells": self.cells, "est_s": round(self.est_s, 1)}
        if self.runs_on:
            entry["runs_on"] = self.runs_on if len(self.runs_on) > 1 else self.runs_on[0]
        return entry


@dataclass
class _Unit:
    """A cell with every invocation it needs (its own and the alone runs it shares)."""

    name: str
    own: list[Invocation]
    needs: set[tuple]  # keys of the baseline and draft-alone runs it is judged with
    runs_on: str | None


def _units(plan: Plan, runs_on: Callable[[Invocation], str | None]) -> tuple[list[_Unit], dict[tuple, list]]:
    alone = group_by((inv for inv in plan.measured if inv.role != "speculative"), alone_of)
    cells = group_by((inv for inv in plan.measured if inv.role == "speculative"), cell_of)
    units = []
    for own in cells.values():  # judged with its baseline and draft alone, where the plan has them
        needs = alone.keys() & {baseline_of(own[0]), draft_alone_of(own[0])}
        units.append(_Unit(cell_name(own[0]), own, needs, runs_on(own[0])))
    return units, alone


def assign(
    plan: Plan,
    count: int,
    estimate: Callable[[Invocation], float] = guess_s,
    runs_on: Callable[[Invocation], str | None] = lambda inv: None,
) -> list[ShardPlan]:
    """Deal the plan's cells to ``count`` shards by estimated time, one ``runs_on`` label a shard."""
    if count < 1:
        raise ConfigError("--shards must be at least 1")
    units, alone = _units(plan, runs_on)
    alone_s = {k: sum(estimate(i) for i in invs) for k, invs in alone.items()}
    shards = [ShardPlan(Shard(i + 1, count)) for i in range(count)]
    has: list[set[tuple]] = [set() for _ in shards]
    label: list[str | None] = [None] * count

    def own_s(u: _Unit) -> float:
        return sum(estimate(i) for i in u.own)

    for u in sorted(units, key=lambda u: (-(own_s(u) + sum(alone_s[k] for k in u.needs)), u.name)):
        extra = [own_s(u) + sum(alone_s[k] for k in u.needs - has[i]) for i in range(count)]
        unfit = [label[i] is not None and label[i] != u.runs_on for i in range(count)]
        best = min(
            range(count), key=lambda i: (unfit[i], shards[i].est_s + extra[i], len(shards[i].cells), i)
        )
        if unfit[best]:
            raise ConfigError(
                f"{len({x.runs_on for x in units})} different runs_on labels need at least as many shards; "
                f"pass --shards {len({x.runs_on for x in units})} or more"
            )
        shards[best].est_s += extra[best]
        has[best] |= u.needs
        label[best] = u.runs_on
        shards[best].cells.append(u.name)
    for s, lab in zip(shards, label, strict=True):
        s.runs_on = lab.split(",") if lab else []
    return shards


def cells_of(plan: Plan) -> list[str]:
    """Every speculative cell of the plan by name, in plan order."""
    return list(dict.fromkeys(cell_name(i) for i in plan.measured if i.role == "speculative"))


def restrict(plan: Plan, shard: Shard, cells: Iterable[str]) -> Plan:
    """The part of ``plan`` that measures ``cells``, with what they are judged against."""
    wanted = set(cells)
    mine = [i for i in plan.measured if i.role == "speculative" and cell_name(i) in wanted]
    needs = {baseline_of(i) for i in mine} | {draft_alone_of(i) for i in mine if draft_alone_of(i)}
    mine_ids = {id(i) for i in mine}
    keep = [i for i in plan.invocations if not i.warmup and (id(i) in mine_ids or (i.role != "speculative"
            and alone_of(i) in needs))]  # fmt: skip

    def kind(i: Invocation) -> tuple:  # what a warmup warms: a binary and its models (a server)
        return (i.binary_role, i.model, i.draft, tuple(i.argv) if i.request else None)

    kinds = {kind(i) for i in keep}
    warm = [i for i in plan.invocations if i.warmup and kind(i) in kinds]
    stamped = [i.model_copy(update={"shard": shard.label}) for i in [*warm, *keep]]
    notes = [*plan.notes, f"shard {shard.label}: {len(wanted)} of the plan's {len(cells_of(plan))} cells"]
    return plan.model_copy(update={"invocations": stamped, "notes": notes})


def runs_on_rule(config: Config) -> Callable[[Invocation], str | None]:
    """The config's ``runs_on``: a pair's label(s), comma-joined, before its target's ``ngl``'s."""
    pairs = {name: p.runs_on for name, p in config.pairs.items() if p.runs_on}
    by_ngl = config.runs_on.ngl

    def rule(inv: Invocation) -> str | None:
        label = pairs.get(inv.pair or "") or (by_ngl.get(inv.ngl) if inv.ngl is not None else None)
        return ",".join(label) if isinstance(label, list) else label

    return rule


@dataclass
class Sharding:
    """What a shard's run records: which shard, its cells, and the whole plan it was cut from."""

    shard: Shard
    cells: list[str]
    plan_cells: list[str]  # every cell of the whole plan (a merge names the ones no shard brought)
    plan_id: str  # config_hash of the whole plan
    est_s: float


def cut(plan: Plan, config: Config, shard: Shard) -> tuple[Plan, Sharding]:
    """Shard ``shard`` of ``plan`` (its matrix entry's cells, else ``assign``'s) and its record."""
    everything = cells_of(plan)
    if shard.count > len(everything):
        raise ConfigError(
            f"--shard {shard.label}: the plan has {len(everything)} cell(s), so at most "
            f"{len(everything)} shards; cut it into fewer"
        )
    plan_id = config_hash(config.model_dump(mode="json"))
    if shard.cells is None:
        mine = assign(plan, shard.count, runs_on=runs_on_rule(config))[shard.index - 1]
        cells, est_s = mine.cells, mine.est_s
    else:
        unknown = [c for c in shard.cells if c not in everything]
        if unknown:
            raise ConfigError(
                f"--shard-cells: {', '.join(unknown)} not in this config's plan (its cells: "
                f"{', '.join(everything)}); pass the cells `specbench plan --shards` printed for this config"
            )
        cells = list(dict.fromkeys(shard.cells))
        est_s = sum(guess_s(i) for i in restrict(plan, shard, cells).measured)
    sharding = Sharding(shard, cells, everything, plan_id, est_s)
    return restrict(plan, shard, cells), sharding


def matrix(plan: Plan, config: Config, count: int, estimate: Callable[[Invocation], float] = guess_s) -> dict:
    """``{"include": [...]}``: the shards as a GitHub Actions matrix (``fromJSON``), one entry each."""
    cells = cells_of(plan)
    if count > len(cells):
        raise ConfigError(
            f"--shards {count}: the plan has {len(cells)} cell(s); cut it into at most {len(cells)}"
        )
    if count > 256:
        raise ConfigError("--shards: a GitHub matrix takes at most 256 jobs")
    shards = assign(plan, count, estimate=estimate, runs_on=runs_on_rule(config))
    return {"include": [s.matrix_entry() for s in shards]}

"""Every run, recorded in SQLite (``gate.historydb``), read back to follow a cell over time.

``compare`` answers "is this run slower than that one"; history answers "since when". A point's value
is the report's figure of the cell (``analysis.figures``), and a different prompt set is another
series. The same t/s price a plan's invocations on this machine (``plan_estimate``).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from specbench.analysis.figures import Standing, Value, figure, standing
from specbench.base.stats import summarize
from specbench.gate.compare import cell_label
from specbench.gate.historydb import SAME_SPAN, StoredRow, default_db, stored_rows
from specbench.plan.invocation import Invocation
from specbench.plan.shards import GUESS_LOAD_S, guess_s
from specbench.results import cell
from specbench.results.cell import is_synthetic
from specbench.results.manifest import KEY_GENERATION, MachineFacts
from specbench.results.metrics import check_metric


class HistoryPoint(BaseModel):
    """One cell in one run: mean and sd over repetitions of the mean over prompts."""

    label: str
    machine: str
    generation: str  # n_predict, temperature... as compare matches them (part of the series identity)
    prompts: str  # the prompt set (part of the series identity)
    runner: str = "process"  # a server's t/s is not a process's (part of the series identity)
    parallel: int = 1  # requests in flight (part of the series identity)
    # what a baseline t/s timed (docs/timing.md): "same-span" from run folder format 2 on (identity)
    timing: str = "decode-only"
    run_id: str
    started_at: str | None
    commit: str | None
    threads: str | None
    mean: float  # the cell's figure (analysis/figures.py): what report shows for it
    sd: float | None
    low: float | None = None  # the figure's 95% interval (None: one repetition)
    high: float | None = None
    n_reps: int
    n_prompts: int
    # the run's speed sentinel: its largest relative move (None: not measured), and whether it warned
    speed_moved: float | None = None
    speed_warned: bool | None = None
    synthetic: bool = False  # a synth_len cell: drafts accepted at random (a simulation)

    @property
    def standing(self) -> Standing:
        """Whether the point may be called a figure (``analysis.figures.standing``)."""
        return standing(self.mean, self.low, self.high, self.synthetic)


def load_history(
    db_path: Path | None = None, metric: str = "spec_tps", cell: str | None = None
) -> list[HistoryPoint]:
    """Points of every cell whose label contains ``cell`` (case-insensitive), oldest run first."""
    check_metric(metric)
    by_point: dict[tuple[str, str], list[StoredRow]] = defaultdict(list)
    for row in stored_rows(db_path or default_db(), metric):
        if not cell or cell.lower() in row.label.lower():
            by_point[(row.cell_id, row.run_key)].append(row)
    points = [p for rows in by_point.values() if (p := _point(metric, rows)) is not None]
    points.sort(key=lambda p: (*series_of(p), p.started_at or "", p.run_id))
    return points


def _point(metric: str, rows: list[StoredRow]) -> HistoryPoint | None:
    """One cell of one run from its rows (one a prompt); None when every value of it is unusable."""
    values = [Value(r.prompt_id, rep, v) for r in rows for rep, v in stored_values(r.repetitions, r.vals)]
    fig = figure(metric, values)  # the report's figure of the cell, from the same values
    if fig.value is None:  # every value of it unusable (stored_values)
        return None
    by_rep: dict[int, list[float]] = defaultdict(list)
    for v in values:
        by_rep[v.repetition].append(v.value)
    summary = summarize([sum(v) / len(v) for _, v in sorted(by_rep.items())])
    row = rows[0]
    key = stored_key(row.cell_id, row.machine)
    return HistoryPoint(
        # the row's label, machine, prompts, run and sentinel (speed_warned stored 0/1); the rest ignored
        **row._asdict(),
        generation=generation_text(key),
        **{f: key.get(f, d) for f, d in cell.RUN_DEFAULTS.items()},  # runner, parallel
        timing="same-span" if row.cell_id.endswith(SAME_SPAN) else "decode-only",
        mean=fig.value,
        sd=summary.sd,
        low=fig.low,
        high=fig.high,
        n_reps=summary.n,
        n_prompts=len(rows),
        synthetic=is_synthetic(key),
    )


def stored_values(repetitions: str, vals: str) -> list[tuple[int, float]]:
    """A stored row's (repetition, value) pairs that are numbers (an older specbench stored NaN as
    ``null``, which no figure may take in): the one reader of the stored lists."""
    try:
        pairs = zip(json.loads(repetitions), json.loads(vals), strict=True)
        return [(int(r), float(v)) for r, v in pairs if isinstance(v, int | float) and math.isfinite(v)]
    except (ValueError, TypeError):  # not two lists of one length: nothing usable
        return []


def series_of(p: HistoryPoint) -> tuple[str, str, str, int, str, str, str]:
    """What makes points one series: the same cell measured the same way (compare would match them)."""
    return (p.machine, p.label, p.runner, p.parallel, p.generation, p.prompts, p.timing)


def span_free(cell_id: str) -> str:
    """A stored cell id without its same-span mark: the id the cell's other metrics (spec_tps,
    acceptance) are stored under, whatever its speedup or baseline t/s timed."""
    return cell_id.removesuffix(SAME_SPAN)


def stored_key(cell_id: str, machine: str) -> dict:
    """The CellKey fields of a stored cell id (MACHINE|KEY JSON|PROMPTS); {} when unreadable."""
    try:
        key = json.loads(cell_id[len(machine) + 1 :].rsplit("|", 1)[0])
    except ValueError:
        return {}
    return key if isinstance(key, dict) else {}


def generation_text(key: dict) -> str:
    """The generation settings of a stored cell key: runs that differ in them are separate series,
    as ``compare`` (same CellKey) refuses to compare them."""
    return ", ".join(f"{k} {key[k]:g}" if isinstance(key.get(k), float) else f"{k} {key.get(k)}"
                     for k in KEY_GENERATION if key.get(k) is not None)  # fmt: skip


@dataclass(frozen=True)
class PlanEstimate:
    """A plan's time as `plan --shards` balances it, `run --dry-run` totals it and `tune` floors its
    budget with: each invocation at this machine's last measured t/s for its cell, else from its
    sizes (``guess_s``)."""

    speeds: dict[tuple[str, str, str, int], float]  # t/s by (label, generation, runner, parallel)

    def known(self, inv: Invocation) -> float | None:
        """Its seconds at the t/s this machine measured for its cell (plus the guessed load time);
        None when this machine never measured the cell this way."""
        gen = generation_text(inv.generation.model_dump())
        tps = self.speeds.get((cell_label(inv), gen, inv.runner, inv.parallel))
        return GUESS_LOAD_S + inv.generation.n_predict / tps if tps else None

    def seconds(self, inv: Invocation) -> float:
        return self.known(inv) or guess_s(inv)

    def total(self, invs: list[Invocation]) -> tuple[float, int]:
        """The invocations' seconds, and how many of them this machine's history knew."""
        return sum(map(self.seconds, invs)), sum(self.known(i) is not None for i in invs)


def plan_estimate(backend: str, db_path: Path | None = None) -> PlanEstimate:
    """The one estimator of a plan's time on this machine (``PlanEstimate``), from the t/s it last
    measured for each baseline and speculative cell."""
    machine = MachineFacts.here(backend).describe()
    speeds = {}
    for metric in ("baseline_tps", "spec_tps"):
        for p in load_history(db_path, metric):  # oldest first within a series: the last one wins
            if p.machine == machine and p.mean > 0 and math.isfinite(p.mean):
                speeds[(p.label, p.generation, p.runner, p.parallel)] = p.mean
    return PlanEstimate(speeds)


def duration_text(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.2 h``: an estimate's precision, no more."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

"""The history as the site shows it: one series per machine, cell and metric, one point per run.

A point is the cell's figure in that run (``analysis.figures``, as the report shows it), flagged
where the rule of ``specbench compare`` fails or improves it against the previous point.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean, geometric_mean

from specbench.analysis.figures import Value, figure
from specbench.base.llamaopts import METHOD
from specbench.gate.decision import ACCEPTANCE_POINTS, ALPHA, THRESHOLD, Status, classify
from specbench.gate.history import generation_text, stored_key, stored_values
from specbench.gate.historydb import stored_rows
from specbench.gate.regression import NOISY_CV, cv, welch_interval
from specbench.results import cell
from specbench.results.cell import is_synthetic
from specbench.results.metrics import METRICS


@dataclass
class Point:
    run_key: str
    run_id: str
    started_at: str
    commit: str
    run_dir: str | None
    mean: float
    # 95% t interval over repetitions, on the log scale for rates and ratios (None with one repetition)
    low: float | None
    high: float | None
    n_reps: int
    reps: list[float]  # per repetition: the mean over prompts
    flag: str | None = None  # "regression" | "improvement" (vs the previous point of the series)
    why: str = ""


@dataclass
class Series:
    machine: str
    metric: str
    label: str
    cell_id: str  # history's cell identity (machine|axes|prompts): the same cell across metrics
    pair: str  # the pair name (speculative) or the model (baseline)
    method: str  # "none" for the baseline
    setting: str  # "draft_max=8 ngl=0": what tells this series from the others of its page
    prompts: str
    generation: str
    key: dict
    points: list[Point] = field(default_factory=list)

    @property
    def latest(self) -> Point:
        return self.points[-1]

    def at(self, run_key: str) -> Point | None:
        """The point of a run (a run is one point of a series at most)."""
        return next((p for p in self.points if p.run_key == run_key), None)

    @property
    def synthetic(self) -> bool:
        """A synth_len cell: drafts accepted at random, a simulation (never the best)."""
        return is_synthetic(self.key)


def _centre(values: list[float], log: bool) -> float:
    """One repetition's value over its prompts (``reps``, read by the change flags): the geometric
    mean for rates and ratios (a metric's ``ratio`` scale)."""
    return geometric_mean(values) if log and all(v > 0 for v in values) else fmean(values)


def _setting(key: dict) -> str:
    parts = []
    for name in cell.SETTING_FIELDS:  # every setting axis, the llama.cpp options included
        v = key.get(name)
        if v is None or (name, v) in cell.RUN_DEFAULTS.items():  # ran as runs do: not worth a word
            continue
        parts.append(f"{name}={v:g}" if isinstance(v, float) else f"{name}={v}")
    return " ".join(parts) or "default"


def load_series(db_paths: list[Path]) -> list[Series]:
    """Every series of the histories (read-only; one per machine in CI, say), points oldest first,
    flags set. A run recorded in two of them (the same run key) is one point."""
    found: dict[tuple[str, str], Series] = {}
    values: dict[tuple, list[Value]] = defaultdict(list)  # by (series, run key), oldest run first
    runs: dict[str, tuple[str, str, str, str | None]] = {}  # by run key: a Point's first fields
    for row in (row for db in db_paths for row in stored_rows(db)):
        if row.metric not in METRICS:
            continue
        sid = (row.metric, row.cell_id)
        if sid not in found:
            key = stored_key(row.cell_id, row.machine)
            found[sid] = Series(
                machine=row.machine,
                metric=row.metric,
                label=row.label,
                cell_id=row.cell_id,
                pair=row.label.split(" ", 1)[0],
                method=str(key.get(METHOD.key) or METHOD.cell_default),
                setting=_setting(key),
                prompts=row.prompts,
                generation=generation_text(key),
                key=key,
            )
        runs[row.run_key] = (row.run_id, row.started_at or "", row.commit or "unknown", row.run_dir)
        values[(sid, row.run_key)] += [
            Value(row.prompt_id, r, v) for r, v in stored_values(row.repetitions, row.vals)
        ]
    for (sid, run_key), vals in values.items():
        series = found[sid]
        fig = figure(series.metric, vals)  # the report's figure of this cell
        if fig.value is None:
            continue
        reps: dict[int, list[float]] = defaultdict(list)
        for v in vals:
            reps[v.repetition].append(v.value)
        per_rep = [_centre(x, METRICS[series.metric].scale == "ratio") for _, x in sorted(reps.items())]
        series.points.append(
            Point(run_key, *runs[run_key], fig.value, fig.low, fig.high, len(per_rep), per_rep)
        )
    for series in found.values():
        series.points.sort(key=lambda p: (p.started_at, p.run_id))
        flag_changes(series)
    return [s for s in found.values() if s.points]


def flag_changes(series: Series, threshold: float = THRESHOLD) -> None:
    """Mark each point that the rule of ``specbench compare`` (``gate.decision.classify`` on one-sided
    95% Welch bounds) fails or calls improved against the one before; a noisy improvement is a warn
    there, so no flag. A change within the threshold can neither fail nor improve: not tested."""
    acceptance = METRICS[series.metric].scale == "points"  # a fraction, judged in points
    exact = acceptance and not series.key.get("temperature")
    for prev, cur in zip(series.points, series.points[1:], strict=False):
        if acceptance:
            change, limit, scale = (cur.mean - prev.mean) * 100, ACCEPTANCE_POINTS, 100.0
        elif prev.mean:
            change, limit, scale = cur.mean / prev.mean - 1, threshold, 1 / abs(prev.mean)
        else:
            continue
        if abs(change) <= limit:
            continue
        found = None if exact else welch_interval(prev.reps, cur.reps, ALPHA)
        low, high = (change, change) if exact else (None, None)
        if found is not None:
            low, high = found[0] * scale, found[1] * scale
        status = classify(change, low, high, limit)
        if status == Status.IMPROVED and max(cv(prev.reps) or 0.0, cv(cur.reps) or 0.0) > NOISY_CV:
            continue
        unit = (lambda v: f"{v:+.1f} points") if acceptance else (lambda v: f"{v:+.1%}")
        bounds = f" (95% bounds {unit(low)} to {unit(high)})" if low is not None and not exact else ""
        if status in (Status.FAIL, Status.IMPROVED):
            cur.flag = "regression" if status == Status.FAIL else "improvement"
            cur.why = f"{unit(change)} vs {prev.run_id}{bounds}"

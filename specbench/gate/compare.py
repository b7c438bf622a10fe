"""Compare two runs cell by cell: the regression gate behind ``specbench compare``.

A cell is one measurement: role, target and draft (by sha256: a renamed file still matches, a
re-quantized one does not), every axis of ``results.cell.Cell``, the prompt and the generation
settings. Both runs must come from one machine; the llama.cpp commit, driver and threads may differ
(usually what is tested) and are shown. A cell's values are its repetitions, decided by
``gate.regression``; per prompt, since averaging over prompts would mix their spread into the noise.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Literal

from pydantic import BaseModel

from specbench.analysis.figures import Figure, Value, figure
from specbench.gate.baseline import InputError, Side
from specbench.gate.comparable import (
    NotComparable,
    check_machine,
    check_timing,
    natural_order,
    shown_differences,
    why_nothing,
)
from specbench.gate.decision import ALPHA, EXIT_CODES, OUTPUT, SEVERITY, THRESHOLD, Status, Verdict
from specbench.gate.regression import Decision, decide_acceptance, decide_throughput, geometric_mean
from specbench.results import cell
from specbench.results.manifest import CellKey, RunFacts, cell_key
from specbench.results.metrics import COMPARE_DEFAULT, METRICS, check_metric
from specbench.results.records import Measurement


class CellSeries(BaseModel):
    """One side's values of one cell, with the names used to show it."""

    key: CellKey
    label: str
    prompt_id: str
    values: list[float] = []
    repetitions: list[int] = []  # the repetition of each value
    statuses: list[str] = []  # status of every sample of the cell (valid or not)


class CellResult(BaseModel):
    label: str
    prompt_id: str
    status: Status | Literal["only_baseline", "only_current"]
    reason: str
    decision: Decision | None = None


class CellFigure(BaseModel):
    """One cell (all its prompts) on each side, as ``report`` shows it (``analysis.figures``)."""

    label: str
    baseline: Figure | None = None  # None: the cell is not on that side
    current: Figure | None = None


class MetricResult(BaseModel):
    metric: str
    unit: str
    cells: list[CellResult] = []
    figures: list[CellFigure] = []  # per cell, over its prompts: the figure report shows
    geomean_ratio: float | None = None  # over the compared cells; None when no cell was compared
    nothing: str | None = None  # why there is nothing to compare: which side has no sample of it

    def count(self, status: str) -> int:
        return sum(1 for c in self.cells if c.status == status)


class Comparison(BaseModel):
    baseline_ref: str
    current_ref: str
    baseline: RunFacts
    current: RunFacts
    threshold: float
    alpha: float
    strict: bool
    allow_missing: bool = False  # a cell missing from the current run passes (else it fails the gate)
    allow_noisy: bool = False  # a cell too noisy to decide passes (else exit 3)
    differences: list[str]  # what differs but is not matched on (commit, driver, threads)
    metrics: list[MetricResult]

    @property
    def failed(self) -> list[CellResult]:
        """Cells that fail the gate: regressions, with --strict warnings, and missing cells."""
        bad: set[str] = {Status.FAIL, Status.WARN} if self.strict else {Status.FAIL}
        if not self.allow_missing:  # a gate must not pass because the current run measured less
            bad.add("only_baseline")
        return [c for m in self.metrics for c in m.cells if c.status in bad]

    @property
    def undecided(self) -> list[CellResult]:
        return [c for m in self.metrics for c in m.cells if c.status == Status.TOO_NOISY]

    @property
    def nothing(self) -> list[str]:
        """Why some metric had nothing to compare (a side without a sample of it)."""
        return [f"{m.metric}: {m.nothing}" for m in self.metrics if m.nothing]

    @property
    def verdict(self) -> Verdict:
        return Verdict.of(len(self.failed), len(self.undecided), bool(self.nothing), self.allow_noisy)

    @property
    def exit_code(self) -> int:
        """0 pass, 1 regression (with --strict, warnings too), 3 too noisy, 4 nothing to compare."""
        return int(EXIT_CODES[self.verdict])


def cell_label(s: Measurement) -> str:
    """How a cell is named in tables: what ran, with which settings (prompt shown separately)."""
    if s.role == "baseline":
        parts = [f"{s.model} baseline"]
    else:
        parts = [s.pair or (f"{s.model}+{s.draft}" if s.draft else s.model), s.method]
    return " ".join(parts + cell.label_parts(s))


def cell_series(side: Side, metric: str) -> dict[CellKey, CellSeries]:
    """Every cell of ``metric`` on one side; a cell whose samples all failed has no values. A baseline
    (prompt, repetition) that each shard of a merged run measured counts once, or the cell would have
    shards x repetitions values and a narrower interval than it measured."""
    m = check_metric(metric)
    paired = m.pairing(side.samples)
    cells: dict[CellKey, CellSeries] = {}
    seen: set[tuple] = set()
    for s in sorted(side.samples, key=lambda x: x.repetition):
        if s.role != m.role:
            continue
        key = cell_key(s, side.facts)
        if (key, s.repetition) in seen:  # another shard's measurement of the same baseline
            continue
        seen.add((key, s.repetition))
        cell = cells.setdefault(key, CellSeries(key=key, label=cell_label(s), prompt_id=s.prompt_id))
        cell.statuses.append(s.status if not s.valid or s.status != "ok" else "ok")
        if not s.valid:
            continue
        raw = m.read(s, paired)
        if raw is not None and m.positive and raw <= 0:  # nothing generated: no value
            cell.statuses[-1] = "0 t/s" if m.unit == "t/s" else f"{metric} <= 0"
            continue
        value = m.value(s, paired)  # None also where llama.cpp printed inf/nan t/s
        if value is not None:
            cell.values.append(value)
            cell.repetitions.append(s.repetition)
    return cells


def default_metrics(base: Side, cur: Side) -> tuple[str, ...]:
    """Both t/s, and acceptance where both sides speculated at temperature 0: there it is exact, so a
    drop means the output changed, which t/s alone would pass."""
    greedy = (
        any(s.role == "speculative" and s.generation.temperature == 0 for s in side.samples)
        for side in (base, cur)
    )
    return (*COMPARE_DEFAULT, "acceptance") if all(greedy) else COMPARE_DEFAULT


def _outputs(side: Side) -> dict[CellKey, tuple[str, set[str]]]:
    out: dict[CellKey, tuple[str, set[str]]] = {}
    for s in side.samples:
        if s.role == "speculative" and s.generation.temperature == 0 and s.output_sha256:
            label, hashes = out.setdefault(cell_key(s, side.facts), (cell_label(s), set()))
            hashes.add(s.output_sha256)
    return out


def output_check(base: Side, cur: Side, allow_change: bool = False) -> MetricResult | None:
    """At temperature 0, each cell and prompt on both sides must generate the same text: a build
    that changed it fails the gate (its own table, ``output``), unless ``allow_change`` (then a
    warning). None when no greedy speculative cell is on both sides."""
    b, c = _outputs(base), _outputs(cur)
    common = [k for k in b if k in c]
    if not common:
        return None
    cells = []
    for key in common:
        label, before = b[key]
        status, why = Status.PASS, "same text at temperature 0"
        if before != c[key][1]:
            why = (
                "the generated text changed at temperature 0 (the same build and models give the same "
                "text): the build's numerics or the models changed"
            )
            status = Status.WARN if allow_change else Status.FAIL
            why += "" if allow_change else "; --allow-output-change passes it"
        cells.append(CellResult(label=label, prompt_id=key.prompt_id, status=status, reason=why))
    cells.sort(key=lambda r: (r.status != Status.FAIL, natural_order(r.label), natural_order(r.prompt_id)))
    return MetricResult(metric=OUTPUT, unit="text", cells=cells)


def cell_figures(
    base: dict[CellKey, CellSeries], cur: dict[CellKey, CellSeries], metric: str
) -> list[CellFigure]:
    """Each cell's figure on the sides it is on, over all its prompts: the number ``report`` prints."""
    by_cell: dict[tuple[CellKey, str], dict[str, list[Value]]] = defaultdict(dict)
    for side, series in (("baseline", base), ("current", cur)):
        for key, s in series.items():
            values = by_cell[(key.model_copy(update={"prompt_id": ""}), s.label)].setdefault(side, [])
            values += [Value(s.prompt_id, r, v) for r, v in zip(s.repetitions, s.values, strict=True)]
    return [
        CellFigure(label=label, **{side: figure(metric, values) for side, values in sides.items()})
        for (_, label), sides in by_cell.items()
    ]


def _missing_reason(series: CellSeries, side: str) -> str:
    what = ", ".join(f"{n} {st}" for st, n in sorted(Counter(series.statuses).items()))
    return f"no valid value in {side} ({what})"


def compare_metric(
    base: dict[CellKey, CellSeries],
    cur: dict[CellKey, CellSeries],
    metric: str,
    threshold: float,
    alpha: float,
) -> MetricResult:
    cells: list[CellResult] = []
    ratios: list[float] = []
    for key in list(base) + [k for k in cur if k not in base]:
        b, c = base.get(key), cur.get(key)
        decision = None
        if b is None:
            status, reason = "only_current", "only in current"
        elif c is None:
            status, reason = "only_baseline", "only in baseline: missing from the current run"
        elif not c.values or not b.values:
            # Crashed, timed out or never speculated (now, or in the baseline): nothing was compared,
            # so the gate cannot pass it.
            why = [_missing_reason(x, side) for x, side in ((b, "baseline"), (c, "current")) if not x.values]
            status, reason = Status.FAIL, "; ".join(why)
        else:
            if METRICS[metric].scale == "points":
                decision = decide_acceptance(b.values, c.values, temperature=key.temperature, alpha=alpha)
            else:
                decision = decide_throughput(b.values, c.values, threshold=threshold, alpha=alpha)
            if decision.ratio is not None:
                ratios.append(decision.ratio)
            status, reason = decision.status, decision.reason
        row = c or base[key]  # how the cell is named
        cells.append(
            CellResult(
                label=row.label, prompt_id=row.prompt_id, status=status, reason=reason, decision=decision
            )
        )
    cells.sort(key=lambda r: (SEVERITY.index(r.status), natural_order(r.label), natural_order(r.prompt_id)))
    return MetricResult(
        metric=metric, unit=METRICS[metric].unit, cells=cells, geomean_ratio=geometric_mean(ratios)
    )


def compare(
    base: Side,
    cur: Side,
    metrics: tuple[str, ...] | list[str] = COMPARE_DEFAULT,
    threshold: float = THRESHOLD,
    alpha: float = ALPHA,
    strict: bool = False,
    allow_missing: bool = False,
    allow_noisy: bool = False,
    allow_output_change: bool = False,
) -> Comparison:
    """Match cells and decide each. A metric one side has no sample of (an interrupted run) has
    nothing to compare (exit 4, never a pass); raises NotComparable when both sides have samples
    but no cell in common (another runner, other models or settings)."""
    if not 0 < alpha < 1:
        raise InputError(f"--alpha {alpha}: must be between 0 and 1 (e.g. 0.05)")
    check_machine(base, cur)
    check_timing(base, cur, metrics)
    results = []
    for m in dict.fromkeys(metrics):
        b, c = cell_series(base, m), cell_series(cur, m)
        empty = [
            f"the {side} ({ref.ref}, {ref.facts.status or 'complete'}, {len(ref.samples)} samples)"
            for side, ref, cells in (("baseline", base, b), ("current", cur, c))
            if not cells
        ]
        if empty:
            nothing = f"{' and '.join(empty)} has no {METRICS[m].role} sample"
            results.append(MetricResult(metric=m, unit=METRICS[m].unit, nothing=nothing))
        else:
            results.append(compare_metric(b, c, m, threshold, alpha))
        results[-1].figures = cell_figures(b, c, m)
    greedy = output_check(base, cur, allow_output_change)
    if greedy is not None:
        results.append(greedy)
    compared = [r for r in results if r.nothing is None]
    if compared and all(c.status in ("only_baseline", "only_current") for r in compared for c in r.cells):
        raise NotComparable(f"not comparable: {why_nothing(base, cur)}")
    return Comparison(
        baseline_ref=base.ref, current_ref=cur.ref, baseline=base.facts, current=cur.facts,
        threshold=threshold, alpha=alpha, strict=strict, allow_missing=allow_missing, allow_noisy=allow_noisy,
        differences=shown_differences(base, cur), metrics=results,
    )  # fmt: skip

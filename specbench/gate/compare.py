"""Compare two runs cell by cell: the regression gate behind ``specbench compare``.

A cell is one measurement: role, target and draft model (by sha256, so a renamed file still
matches and a re-quantized one does not), method and its settings (every axis of
``specbench.results.cell.Cell``), the prompt, and the generation settings that define the work (n_predict,
temperature, top_k, seed, ctx_size). Both runs must come from the same machine (CPU model, GPU
models, backend). The llama.cpp commit, the driver and the thread count may differ (that is
usually what is being tested) and are shown. The values of a cell are its repetitions, one valid
sample each; the decision per cell is in ``specbench.gate.regression``.

Why per prompt and not averaged over prompts: the prompt is part of what defines a measurement
(code drafts far better than chat), and the repetitions of one prompt are what the t-test needs;
averaging first would mix prompt-to-prompt spread into the noise. The summary line gives the
geometric mean of the per-cell ratios.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Literal

from pydantic import BaseModel

from specbench.analysis.figures import Figure, Value, figure
from specbench.gate.baseline import InputError, Side
from specbench.gate.decision import EXIT_CODES, Status, Verdict, verdict
from specbench.gate.regression import Decision, decide_acceptance, decide_throughput, geometric_mean
from specbench.results import cell
from specbench.results.folder import MANIFEST
from specbench.results.identity import CellKey, cell_key
from specbench.results.manifest import RunFacts
from specbench.results.metrics import COMPARE_DEFAULT, METRICS, choices
from specbench.results.records import Sample

DEFAULT_METRICS = COMPARE_DEFAULT  # each metric's facts: results/metrics.py
OUTPUT = "output"  # the greedy output check (``output_check``): not a number, its own table


class NotComparable(InputError):
    """The two sides share no measurement (exit 2)."""


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
    cells: list[CellResult]
    figures: list[CellFigure] = []  # per cell, over its prompts: the figure report shows
    geomean_ratio: float | None  # over the compared cells; None when no cell was compared
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
        return verdict(len(self.failed), len(self.undecided), bool(self.nothing), self.allow_noisy)

    @property
    def exit_code(self) -> int:
        """0 pass, 1 regression (with --strict, warnings too), 3 too noisy, 4 nothing to compare."""
        return int(EXIT_CODES[self.verdict])


def cell_label(s: Sample) -> str:
    """How a cell is named in tables: what ran, with which settings (prompt shown separately)."""
    if s.role == "baseline":
        parts = [f"{s.model} baseline"]
    else:
        parts = [s.pair or (f"{s.model}+{s.draft}" if s.draft else s.model), s.method]
    return " ".join(parts + cell.label_parts(s))


def cell_series(side: Side, metric: str) -> dict[CellKey, CellSeries]:
    """Every cell of ``metric`` on one side; a cell whose samples all failed has no values.

    In a merged sharded run each shard measured the baselines of its own cells, so one baseline
    (prompt, repetition) can be there once per shard: it counts once (the first shard's), or the
    cell would have shards x repetitions values and a narrower interval than it measured."""
    if metric not in METRICS:
        raise InputError(f"--metric {metric}: choose one of {choices()}")
    m = METRICS[metric]
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


def _greedy_speculative(side: Side) -> bool:
    return any(s.role == "speculative" and s.generation.temperature == 0 for s in side.samples)


def default_metrics(base: Side, cur: Side) -> tuple[str, ...]:
    """Both t/s, and acceptance where both sides speculated at temperature 0: there it is exact (the
    same build, models and prompt accept the same tokens), so a drop means the output changed, which
    t/s alone would pass."""
    if _greedy_speculative(base) and _greedy_speculative(cur):
        return (*DEFAULT_METRICS, "acceptance")
    return DEFAULT_METRICS


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
        after = c[key][1]
        if before == after:
            cells.append(CellResult(label=label, prompt_id=key.prompt_id, status=Status.PASS,
                                    reason="same text at temperature 0"))  # fmt: skip
            continue
        why = ("the generated text changed at temperature 0 (the same build and models give the same "
               "text): the build's numerics or the models changed")  # fmt: skip
        status = Status.WARN if allow_change else Status.FAIL
        why += "" if allow_change else "; --allow-output-change passes it"
        cells.append(CellResult(label=label, prompt_id=key.prompt_id, status=status, reason=why))
    cells.sort(key=lambda r: (r.status != Status.FAIL, _natural(r.label), _natural(r.prompt_id)))
    return MetricResult(metric=OUTPUT, unit="text", cells=cells, geomean_ratio=None)


def _figures(series: dict[CellKey, CellSeries], metric: str) -> dict[tuple[CellKey, str], Figure]:
    by_cell: dict[tuple[CellKey, str], list[Value]] = defaultdict(list)
    for key, s in series.items():
        whole = (key.model_copy(update={"prompt_id": ""}), s.label)
        by_cell[whole] += [Value(s.prompt_id, r, v) for r, v in zip(s.repetitions, s.values, strict=True)]
    return {k: figure(metric, v) for k, v in by_cell.items()}


def cell_figures(
    base: dict[CellKey, CellSeries], cur: dict[CellKey, CellSeries], metric: str
) -> list[CellFigure]:
    """Each cell's figure on both sides, over all its prompts: the number ``report`` prints for it."""
    b, c = _figures(base, metric), _figures(cur, metric)
    return [
        CellFigure(label=k[1], baseline=b.get(k), current=c.get(k))
        for k in list(b) + [k for k in c if k not in b]
    ]


def _missing_reason(series: CellSeries, side: str) -> str:
    counts = defaultdict(int)
    for status in series.statuses:
        counts[status] += 1
    what = ", ".join(f"{n} {st}" for st, n in sorted(counts.items()))
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
        shown = c or b

        def row(status, reason: str, decision: Decision | None = None, shown=shown) -> CellResult:
            return CellResult(label=shown.label, prompt_id=shown.prompt_id, status=status, reason=reason,
                              decision=decision)  # fmt: skip

        if b is None or c is None:
            cells.append(
                row("only_current", "only in current")
                if b is None
                else row("only_baseline", "only in baseline: missing from the current run")
            )
        elif not c.values or not b.values:
            # Crashed, timed out or never speculated (now, or in the baseline): nothing was compared,
            # so the gate cannot pass it.
            why = [_missing_reason(x, side) for x, side in ((b, "baseline"), (c, "current")) if not x.values]
            cells.append(row(Status.FAIL, "; ".join(why)))
        else:
            if METRICS[metric].scale == "points":
                decision = decide_acceptance(b.values, c.values, temperature=key.temperature, alpha=alpha)
            else:
                decision = decide_throughput(b.values, c.values, threshold=threshold, alpha=alpha)
            if decision.ratio is not None:
                ratios.append(decision.ratio)
            cells.append(row(decision.status, decision.reason, decision))
    order = {
        Status.FAIL: 0,
        Status.WARN: 1,
        Status.TOO_NOISY: 1.5,
        "only_baseline": 2,
        "only_current": 3,
        Status.IMPROVED: 4,
        Status.PASS: 5,
    }
    cells.sort(key=lambda r: (order[r.status], _natural(r.label), _natural(r.prompt_id)))
    return MetricResult(
        metric=metric, unit=METRICS[metric].unit, cells=cells, geomean_ratio=geometric_mean(ratios)
    )


def _natural(text: str) -> tuple:
    """Sort key that orders numbers by value: draft_max=4 before draft_max=16."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text))


def _threads(samples: list[Sample]) -> str:
    values = sorted({str(s.generation.threads) if s.generation.threads else "default" for s in samples})
    return ",".join(values) or "-"


def shown_differences(base: Side, cur: Side) -> list[str]:
    """What may differ between the sides and is shown, not matched on."""
    out = []
    pairs = [
        ("llama.cpp commit", base.facts.llama_cpp_commit, cur.facts.llama_cpp_commit),
        ("driver", ", ".join(base.facts.drivers) or None, ", ".join(cur.facts.drivers) or None),
        ("threads", _threads(base.samples), _threads(cur.samples)),
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


_WHY_ORDER = (
    "target",
    "runner",
    "parallel",
    "n_predict",
    "temperature",
    "seed",
    "ctx_size",
    "top_k",
    "prompt_id",
)


def _why_nothing(base: Side, cur: Side) -> str:
    """Name the first reason no cell matched: models, generation settings, prompts, settings."""

    def ids(side: Side, attr: str) -> set[str]:
        roles = ("baseline", "speculative")
        return {str(getattr(cell_key(s, side.facts), attr)) for s in side.samples if s.role in roles}

    def names(side: Side) -> str:
        return ", ".join(sorted({s.model for s in side.samples}))

    for attr in _WHY_ORDER:
        b, c = ids(base, attr), ids(cur, attr)
        if b and c and not (b & c):
            if attr == "target":
                return f"different models ({names(base)} vs {names(cur)}: no sha256 in common)"
            if attr == "runner":
                return (
                    f"different runners ({', '.join(sorted(b))} vs {', '.join(sorted(c))}): a server's "
                    "t/s is not a process's; compare runs of one runner"
                )
            what = "prompts" if attr == "prompt_id" else attr
            return f"different {what} ({', '.join(sorted(b))} vs {', '.join(sorted(c))})"
    axes = _differing_axes(base, cur)
    if axes:
        return f"no cell measured on both sides: the settings differ ({'; '.join(axes)})"
    return "no cell (method, settings, prompt) measured on both sides"


# The cell key's fields that are not settings: named by _WHY_ORDER above, or which side is which.
_NOT_AXES = ("role", "target", "draft", *_WHY_ORDER)


def _differing_axes(base: Side, cur: Side) -> list[str]:
    """``axis: base values -> current values`` for every axis of the cell key (so every field of
    ``Cell``, a new one included) whose values differ between the sides, per role: the
    speculative cells first, then the baselines (a baseline has no draft settings to compare)."""

    def shown(v: object) -> str:
        return "unset" if v is None else str(v)

    def axis_values(side: Side, role: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = defaultdict(set)
        for s in side.samples:
            if s.role == role:
                for name, v in cell_key(s, side.facts).model_dump().items():
                    if name not in _NOT_AXES:
                        out[name].add(shown(v))
        return out

    found: dict[str, str] = {}
    for role in ("speculative", "baseline"):
        b, c = axis_values(base, role), axis_values(cur, role)
        if not b or not c:
            continue
        for name in CellKey.model_fields:
            if name in b and name in c and b[name] != c[name] and name not in found:
                found[name] = f"{name}: {', '.join(sorted(b[name], key=_natural))} -> " + ", ".join(
                    sorted(c[name], key=_natural)
                )
    return list(found.values())


def compare(
    base: Side,
    cur: Side,
    metrics: tuple[str, ...] | list[str] = DEFAULT_METRICS,
    threshold: float = 0.05,
    alpha: float = 0.05,
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
            (side, ref) for side, ref, cells in (("baseline", base, b), ("current", cur, c)) if not cells
        ]
        if empty:
            what = " and ".join(f"the {side} ({ref.ref}, {_status(ref)})" for side, ref in empty)
            nothing = f"{what} has no {METRICS[m].role} sample"
            results.append(
                MetricResult(metric=m, unit=METRICS[m].unit, cells=[], geomean_ratio=None, nothing=nothing)
            )
        else:
            results.append(compare_metric(b, c, m, threshold, alpha))
        results[-1].figures = cell_figures(b, c, m)
    greedy = output_check(base, cur, allow_output_change)
    if greedy is not None:
        results.append(greedy)
    compared = [r for r in results if r.nothing is None]
    if compared and all(c.status in ("only_baseline", "only_current") for r in compared for c in r.cells):
        raise NotComparable(f"not comparable: {_why_nothing(base, cur)}")
    return Comparison(
        baseline_ref=base.ref, current_ref=cur.ref, baseline=base.facts, current=cur.facts,
        threshold=threshold, alpha=alpha, strict=strict, allow_missing=allow_missing, allow_noisy=allow_noisy,
        differences=shown_differences(base, cur),
        metrics=results,
    )  # fmt: skip


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
        "measure the baseline again with this specbench, or compare --metric spec_tps only (docs/timing.md)"
    )


def _status(side: Side) -> str:
    status = side.facts.status or "complete"
    return f"{status}, {len(side.samples)} samples"

"""One cell of a run: its samples, baseline and draft-alone runs aggregated into one report row.

A *cell* is one speculative setting of one run (``results.cell.Cell``): its baseline is the samples
``results.cell.baseline_of`` names, its draft-alone samples give the cost ratio c of the speed
model. Only valid samples enter the statistics; invalid and failed ones are counted and make the
row not ``valid``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import reduce
from typing import Any

from specbench.analysis import speedmodel
from specbench.analysis.figures import Figure, Pair, Value, figure, paired_speedup
from specbench.analysis.quality import DEFAULT_PRECISION, assess
from specbench.base.llamaopts import OPTIONS
from specbench.base.methods import draft_free
from specbench.base.stats import summarize
from specbench.parse.parsed import SpecCounters
from specbench.results import bracket, cell
from specbench.results.calibration import Calibration
from specbench.results.manifest import RunFacts
from specbench.results.records import Sample

CONTRACT_KEYS = [
    "run", "pair", "target", "draft", "method", "draft_max", "ngl", "ngld", "category",
    "baseline_tps", "baseline_tps_sd", "spec_tps", "spec_tps_sd", "speedup", "speedup_ci_low",
    "speedup_ci_high", "acceptance", "tokens_per_pass", "predicted_speedup", "outputs_match", "valid", "n",
]  # fmt: skip
ALL = "all"


ROW_NAMES = {"model": "target"}  # a row's name for an axis, where it differs
ROW_CELL = tuple(ROW_NAMES.get(f, f) for f in cell.CELL_FIELDS)


class NotRun(cell.LeftOut):
    """A cell a run's plan left out (``results.cell.LeftOut``), with the run it belongs to."""

    run: str

    def axis(self, name: str) -> Any:
        """The cell's value of an axis, by the row's name for it (``target`` for ``model``)."""
        return self.run if name == "run" else getattr(self.cell, _CELL_NAMES.get(name, name))


_CELL_NAMES = {v: k for k, v in ROW_NAMES.items()}
# made from the cell's fields at import (create_model): its fields are unknown to the type checker
_RowCell: Any = cell.model_with_cell("_RowCell", "Every axis of the cell, as a row names it.", ROW_NAMES)


class ReportRow(_RowCell):
    """One cell (or one category of a cell): the JSON contract keys first (``records``), then extras."""

    run: str
    category: str
    baseline_tps: float | None
    baseline_tps_sd: float | None
    spec_tps: float | None
    spec_tps_sd: float | None
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    acceptance: float | None
    tokens_per_pass: float | None
    predicted_speedup: float | None
    outputs_match: bool | None
    valid: bool
    n: int
    # extras
    baseline_n: int = 0
    baseline_ci_low: float | None = None
    baseline_ci_high: float | None = None
    spec_ci_low: float | None = None
    spec_ci_high: float | None = None
    n_total: int = 0
    n_invalid: int = 0
    n_failed: int = 0
    draft_tps: float | None = None
    cost_ratio: float | None = None
    best_draft_max: int | None = None  # the speedup model's best draft length (None: unbounded)
    first_diff: int | None = None  # earliest differing character among mismatched samples
    best: bool = False  # highest measured speedup of its pair (per run and category)
    model_speedup: float | None = None  # calibrated speed model (specbench.analysis.speedmodel)
    model_calibration: str | None = None  # which calibration model_speedup comes from (Calibration.describe)
    spec_tps_rel_ci: float | None = None  # relative 95% CI half-width of spec_tps (repetition noise)
    baseline_tps_rel_ci: float | None = None
    precision_met: bool | None = None  # both within `precision`; None unless `repetitions: auto`
    repeatable: bool | None = None  # greedy repetitions agreed (analysis.quality.repeatability)
    warnings: list[str] = []  # short, actionable (specbench.analysis.quality)
    throughput_tps: float | None = None  # server: tokens generated / wall time of the cell's batches
    baseline_throughput_tps: float | None = None  # the same for its baseline samples
    ttft_ms: float | None = None  # server: mean time to first token (prompt processing) per request
    machine: str | None = None  # sharded sweeps: the host that measured the row's shard
    synthetic: bool = False  # synth_len set: drafts accepted at random (a point of the machine's curve)
    # server runner, from /metrics: accepted drafts per verification step + 1; per draft position
    accept_len: float | None = None
    accept_by_pos: list[float] | None = None  # the share of steps that accepted the token there
    # the samples' acceptance, a t interval over them (speculation at depth: specbench.analysis.depth)
    acceptance_ci_low: float | None = None
    acceptance_ci_high: float | None = None
    # the speedup's paired statistics (analysis.figures), and the range of its per-prompt speedups
    speedup_repetitions: int = 0  # behind its interval (1: no interval, the report says n=1)
    speedup_prompts: int = 0
    speedup_prompt_low: float | None = None
    speedup_prompt_high: float | None = None
    # same-span timing (span_fields): the baseline's decode-only rate, each side's share outside it
    baseline_decode_tps: float | None = None
    baseline_outside: float | None = None
    spec_outside: float | None = None
    # server runner: the baseline window (results.bracket) judged against; None: the run has one
    baseline_window: str | None = None  # "before" or "after" the speculative servers

    def cell(self) -> tuple:
        """Every axis, in axis order, without run and category: rows of different runs line up on it."""
        return tuple(getattr(self, f) for f in ROW_CELL)


_NAMED_APART = ("runner", *(o.key for o in OPTIONS if o.column))  # the report's own columns


def cell_name(r: ReportRow) -> str:
    """A row's cell in a sentence (``smol draft_max 8``, ``lookup ngram-simple ngram_size_n 3``):
    the pair, its method unless it drafts with a model, the other axes set away from their default
    (draft_min, p_min and where it ran are left to the table), the draft length last."""
    what = [r.pair or r.target] + ([r.method] if r.method != "draft" else [])
    for f in cell.SETTING_FIELDS:
        value = getattr(r, ROW_NAMES.get(f, f))
        if f not in _NAMED_APART and value is not None and value != cell.default(f):
            what.append(f"{f} {value:g}" if isinstance(value, float) else f"{f} {value}")
    return " ".join(what) + (f" draft_max {r.draft_max}" if r.draft_max is not None else "")


def is_invalid(s: Sample) -> bool:
    return s.status == "invalid" or (s.status == "ok" and not s.valid)


def _pooled(samples: Iterable[Sample]) -> tuple[float | None, float | None]:
    """The acceptance, sum(n_accept) / sum(n_drafted), and the tokens per pass, sum(n_predict) /
    sum(n_predict - n_accept) (each target pass yields its accepted tokens + 1), each over the
    samples whose log has both of its counts."""
    accepted = drafted = tokens = passes = 0
    for m in (s.metrics for s in samples if s.metrics):
        if m.n_accept is not None and m.n_drafted is not None:
            accepted += m.n_accept
            drafted += m.n_drafted
        if m.n_predict is not None and m.n_accept is not None:
            tokens += m.n_predict
            passes += m.n_predict - m.n_accept
    return (accepted / drafted if drafted > 0 else None), (tokens / passes if passes > 0 else None)


def _throughput(samples: list[Sample]) -> float | None:
    """Server samples: tokens generated over the wall time of their batches (requests in flight
    together share one batch time), so at parallel P it is what the server delivered in aggregate."""
    batches: dict[int, float] = {}
    tokens = 0
    for s in samples:
        if s.batch is None or s.batch_wall_s is None or s.n_generated is None or not s.usable:
            continue
        batches[s.batch] = s.batch_wall_s
        tokens += s.n_generated
    seconds = sum(batches.values())
    return tokens / seconds if seconds > 0 else None


def _counters(samples: list[Sample]) -> SpecCounters | None:
    """The /metrics draft counters summed over the samples' batches (each batch once: requests in
    flight together share one reading)."""
    once: dict[tuple, SpecCounters] = {}
    for s in samples:
        if s.spec_counters is not None:
            once.setdefault((s.batch, s.started_at), s.spec_counters)
    return reduce(SpecCounters.plus, once.values()) if once else None


# Both t/s of a speedup are timed over the same span (docs/timing.md); llama.cpp times its decode
# calls inside it, and the rest (sampling, batch preparation, printing, drafting) is shown as a share.
def _mean(values: list[float | None]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return math.fsum(finite) / len(finite) if finite else None


def share(outside: float) -> float | None:
    """A share of a span, or None when it cannot be one (``--no-perf``, timers that disagree with
    the span): such a figure measures nothing."""
    return outside if 0.0 <= outside < 1.0 else None


def baseline_outside(s: Sample) -> float | None:
    """Share of a plain run's span outside its decode calls: 1 - eval time / span (the span holds
    exactly the ``eval runs`` decodes)."""
    perf = s.metrics.perf.target if s.metrics and s.metrics.perf else None
    # llama-server (timings) times the span only: no decode-only timer to set beside it
    if s.timings is not None or not s.span_s or perf is None or not perf.eval_ms:
        return None
    return share(1.0 - perf.eval_ms / (s.span_s * 1000.0))


def spec_outside(s: Sample) -> float | None:
    """Share of a speculative run's ``decoded`` span outside the target's passes: its prompt eval
    holds the verification passes and the prompt's own pass, which the ``encoded`` line times (with
    a draft model the draft's prompt pass too: then an upper bound). Drafting counts as outside."""
    log = s.metrics
    perf = log.perf.target if log and log.perf else None
    if log is None or perf is None or not (log.decoded and log.decoded.seconds) or log.encoded is None:
        return None
    if log.encoded.seconds is None or perf.prompt_eval_ms is None:
        return None
    passes = perf.prompt_eval_ms + (perf.eval_ms or 0.0) - log.encoded.seconds * 1000.0
    if passes <= 0:  # --no-perf: no pass was timed
        return None
    return share(1.0 - passes / (log.decoded.seconds * 1000.0))


def span_fields(spec: list[Sample], base: list[Sample]) -> dict[str, float | None]:
    """The report row's ``baseline_decode_tps``, ``baseline_outside`` and ``spec_outside`` (means
    over the cell's usable samples), only for a run that timed its baselines' spans (format 2)."""
    if not any(b.span_s for b in base):
        return {"baseline_decode_tps": None, "baseline_outside": None, "spec_outside": None}
    return {
        "baseline_decode_tps": _mean([b.decode_tps for b in base if b.decode_tps is not None]),
        "baseline_outside": _mean([baseline_outside(b) for b in base]),
        "spec_outside": _mean([spec_outside(s) for s in spec]),
    }


def cost_ratio_of(
    method: str, draft: str | None, target_tps: float | None, draft_tps: float | None
) -> float | None:
    """The cell's c: measured for a draft model that ran alone; 0 for n-gram methods (a lookup
    costs nothing next to a forward pass); None (unknown) for a head or MTP layers, which cannot
    run alone -- not 0, which would predict their speedup as if drafting were free."""
    if draft is None and draft_free(method):
        return 0.0
    return speedmodel.cost_ratio(target_tps, draft_tps)


def _pairs(spec: list[Sample], paired: dict[tuple, Sample]) -> list[Pair]:
    """Each usable speculative sample with the baseline ``results.bracket.paired_baseline`` pairs
    it with (the rule compare, history and publish read too)."""
    out = []
    for s in spec:
        base = paired.get(s.sample_key())
        if base is None or s.tps is None or base.tps is None or bracket.speedup_ratio(s, base) is None:
            continue
        out.append(Pair(s.prompt_id, s.repetition, s.tps, base.tps))
    return out


def _tps_figures(pairs: list[Pair], spec: list[Sample], base: list[Sample]) -> tuple[Figure, Figure]:
    """The row's spec and baseline t/s, averaged as its speedup is (``figures.figure``) and over the
    pairs it uses, so that spec / baseline is the speedup; each side's usable samples without a pair."""
    if pairs:
        spec_v = [Value(x.prompt, x.repetition, x.spec_tps) for x in pairs]
        base_v = [Value(x.prompt, x.repetition, x.base_tps) for x in pairs]
    else:
        spec_v = [Value(s.prompt_id, s.repetition, s.tps) for s in spec if s.tps is not None]
        base_v = [Value(s.prompt_id, s.repetition, s.tps) for s in base if s.tps is not None]
    return figure("spec_tps", spec_v), figure("baseline_tps", base_v)


def _row(
    run: str,
    category: str,
    spec: list[Sample],
    base: list[Sample],
    drafts: list[Sample],
    facts: RunFacts | None,
    cal: Calibration | None,
    paired: dict[tuple, Sample],
) -> ReportRow:
    first = spec[0]
    quality = assess(spec, base, facts)
    used = [s for s in spec if s.usable]
    base_used = [s for s in base if s.usable]
    b = summarize([s.tps for s in base_used if s.tps is not None])  # all of them (usable); the sd
    p = summarize([s.tps for s in used if s.tps is not None])  # (the columns' centre is the figure's)
    pairs = _pairs(used, paired)
    ratio = paired_speedup(pairs)
    spec_fig, base_fig = _tps_figures(pairs, used, base_used)
    acceptance, tpp = _pooled(used)
    acc = summarize([s.acceptance for s in used if s.acceptance is not None])
    draft_tps = summarize([s.tps for s in drafts if s.usable and s.tps is not None]).mean
    c = cost_ratio_of(first.method, first.draft, b.mean, draft_tps)
    g, predicted, best_g = first.draft_max, None, None
    if acceptance is not None and c is not None and g:
        a = min(max(acceptance, 0.0), 1.0)
        predicted = speedmodel.predicted_speedup(a, g, c)
        best_g = speedmodel.best_draft_length(a, c)
    drafted = speedmodel.drafted_per_pass(tpp, acceptance, g, first.p_min) if g else None
    modelled = speedmodel.cell_model_speedup(
        cal, first.model, first.ngl, first.draft, first.ngld, g, tpp, b.mean, drafted
    )
    compared = [s.outputs_match for s in spec if s.outputs_match is not None]
    diffs = [s.first_diff for s in spec if s.outputs_match is False and s.first_diff is not None]
    axes = {ROW_NAMES.get(f, f): v for f, v in cell.cell_dict(first).items()}
    counters = _counters(used)
    return ReportRow(
        **axes, run=run, category=category,
        baseline_tps=base_fig.value, baseline_tps_sd=b.sd, spec_tps=spec_fig.value, spec_tps_sd=p.sd,
        speedup=ratio.value, speedup_ci_low=ratio.ci_low, speedup_ci_high=ratio.ci_high,
        speedup_repetitions=ratio.repetitions, speedup_prompts=ratio.prompts,
        speedup_prompt_low=ratio.prompt_low, speedup_prompt_high=ratio.prompt_high,
        acceptance=acceptance, tokens_per_pass=tpp, predicted_speedup=predicted,
        outputs_match=all(compared) if compared else None,
        valid=len(used) == len(spec) and len(base_used) == len(base) and bool(base),
        n=len(used), baseline_n=b.n,
        baseline_ci_low=base_fig.low, baseline_ci_high=base_fig.high, spec_ci_low=spec_fig.low,
        spec_ci_high=spec_fig.high,
        n_total=len(spec), n_invalid=sum(is_invalid(s) for s in spec),
        n_failed=sum(s.status in ("failed", "timeout") for s in spec), draft_tps=draft_tps, cost_ratio=c,
        best_draft_max=best_g, first_diff=min(diffs) if diffs else None, model_speedup=modelled,
        model_calibration=cal.describe() if modelled is not None and cal is not None else None,
        **vars(quality), throughput_tps=_throughput(used),
        baseline_throughput_tps=_throughput(base_used),
        ttft_ms=summarize([s.ttft_ms for s in used if s.ttft_ms is not None]).mean,
        machine=facts.shard_machines.get(first.shard) if facts and first.shard else None,
        synthetic=cell.is_synthetic(first), accept_len=counters.accept_len() if counters else None,
        accept_by_pos=counters.accept_by_pos() if counters else None, **span_fields(used, base_used),
        acceptance_ci_low=acc.ci_low, acceptance_ci_high=acc.ci_high,
    )  # fmt: skip


def sort_key(value: object) -> tuple:
    return (value is None, value if value is not None else 0)


def run_rows(
    run: str, samples: list[Sample], facts: RunFacts | None = None, cal: Calibration | None = None
) -> list[ReportRow]:
    cells = cell.group_by((s for s in samples if s.role == "speculative"), cell.cell_of)
    judged = bracket.judged_baselines(samples)  # the one pairing rule (results/bracket.py)
    paired = bracket.paired_baseline(samples)
    drafts = [s for s in samples if s.role == "draft"]
    rows: list[ReportRow] = []
    for key, spec in cells.items():
        j = judged[key]
        keys = {(s.prompt_id, s.repetition) for s in spec}
        alone_key = cell.draft_alone_of(spec[0])
        alone = [d for d in drafts if cell.alone_of(d) == alone_key and (d.prompt_id, d.repetition) in keys]
        cell_rows = [_row(run, ALL, spec, j.base, alone, facts, cal, paired)]
        for c in sorted({s.category for s in spec}):
            spec_c, base_c, alone_c = ([s for s in xs if s.category == c] for xs in (spec, j.base, alone))
            cell_rows.append(_row(run, c, spec_c, base_c, alone_c, facts, cal, paired))
        moved = bracket_warning(j.before, j.late, facts)
        for r in cell_rows:
            r.baseline_window = ("after" if j.is_after else "before") if j.late else None
            if moved:
                r.warnings.append(moved.format(window=r.baseline_window))
        rows += cell_rows
    _use_curve(rows)
    return rows


def bracket_warning(before: list[Sample], after: list[Sample], facts: RunFacts | None) -> str | None:
    """The mark of a cell measured across a change of the machine's speed: its baseline's two
    windows (server runner) differ beyond the run's precision. ``{window}`` is the one it is judged
    against."""
    means = bracket.window_means(before, after)
    if means is None or not means[0]:
        return None
    limit = (facts.precision if facts else None) or DEFAULT_PRECISION
    move = (means[1] - means[0]) / means[0]
    if abs(move) <= limit:
        return None
    return (
        f"speed moved: the baseline moved {move:+.0%} between its windows before and after the "
        f"speculative servers ({means[0]:.1f} to {means[1]:.1f} t/s), beyond the precision {limit:.0%}; "
        "judged against the nearer ({window}) window"
    )


def step_len(r: ReportRow) -> float | None:
    """Tokens a verification step yields: the server's counted acceptance length, else tokens per
    pass (the process runner's statistics have no count of steps)."""
    return r.accept_len if r.accept_len is not None else r.tokens_per_pass


def _use_curve(rows: list[ReportRow]) -> None:
    """Where the run measured the machine's curve (synthetic cells of a real cell's setting, same
    category), the real cell's model speedup is the curve's speedup at its acceptance length."""
    curves: dict[tuple, list[tuple[float, float]]] = {}
    for r in rows:
        x = step_len(r)
        if r.synthetic and x is not None and r.speedup is not None:
            curves.setdefault((*_setting(r), r.category), []).append((x, r.speedup))
    for r in rows:
        points = curves.get((*_setting(r), r.category))
        x = step_len(r)
        if r.synthetic or not points or x is None:
            continue
        modelled = speedmodel.curve_speedup(points, x)
        if modelled is not None:
            xs = [p[0] for p in points]
            r.model_speedup = modelled
            r.model_calibration = (
                f"the run's synthetic curve ({len(points)} points, acceptance length "
                f"{min(xs):.2f}-{max(xs):.2f})"
            )


def _setting(r: ReportRow) -> tuple:
    """A row's cell without synthetic acceptance: the real cell a synthetic one stands beside."""
    return tuple(getattr(r, f) for f in ROW_CELL if f not in cell.SYNTH_FIELDS)

"""Aggregate a run's samples into the rows a person decides from.

A *cell* is one speculative setting of one run: (pair, method, draft_max, draft_min, p_min, ngl,
ngld). Its *baseline* is the baseline samples of the pair's target with the same ``ngl``, over the
prompts and repetitions the cell ran; its *draft-alone* samples (role ``draft``, the pair's draft
model at the cell's ``ngld``) give the cost ratio c for the speedup model. Only valid samples enter
the statistics; invalid and failed ones are counted (``n_total``, ``n_invalid``, ``n_failed``) and
flip ``valid`` to False.

Row fields beyond issue 6's JSON contract (``CONTRACT_KEYS``) are extras that come after them.
``n`` is the number of valid speculative samples used; ``valid`` is True when every speculative
sample of the cell and every matched baseline sample is valid.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from specbench.analysis import stats
from specbench.analysis.caveats import caveats, generation_text
from specbench.analysis.published import published_note
from specbench.analysis.quality import assess
from specbench.analysis.speedmodel import cell_model_speedup
from specbench.errors import RunError, SpecbenchError
from specbench.paths import results_dir
from specbench.results.calibration import Calibration
from specbench.results.folder import (
    StoredRun,
    has_samples,
    load_calibration,
    read_facts,
    read_run,
    run_folders,
    samples_path,
)  # fmt: skip
from specbench.results.manifest import RunFacts
from specbench.results.records import Sample

CONTRACT_KEYS = [
    "run", "pair", "target", "draft", "method", "draft_max", "ngl", "ngld", "category",
    "baseline_tps", "baseline_tps_sd", "spec_tps", "spec_tps_sd", "speedup", "speedup_ci_low",
    "speedup_ci_high", "acceptance", "tokens_per_pass", "predicted_speedup", "outputs_match", "valid", "n",
]  # fmt: skip
ALL = "all"
GAP_FACTOR = 0.7  # measured below this fraction of the prediction is a finding worth a sentence


class ReportError(SpecbenchError):
    """A run folder cannot be reported (missing, empty, not a run)."""


class ReportRow(BaseModel):
    """One cell (or one category of a cell): the JSON contract keys first, then extras."""

    run: str
    pair: str | None
    target: str
    draft: str | None
    method: str
    draft_max: int | None
    ngl: int | None
    ngld: int | None
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
    draft_min: int | None = None
    p_min: float | None = None
    ngram_size_n: int | None = None
    ngram_size_m: int | None = None
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
    spec_tps_rel_ci: float | None = None  # relative 95% CI half-width of spec_tps (repetition noise)
    baseline_tps_rel_ci: float | None = None
    precision_met: bool | None = None  # both within `precision`; None unless `repetitions: auto`
    warnings: list[str] = []  # short, actionable (specbench.analysis.quality)
    runner: str = "process"  # process | server
    parallel: int = 1  # requests in flight at once (server runner)
    throughput_tps: float | None = None  # server: tokens generated / wall time of the cell's batches
    baseline_throughput_tps: float | None = None  # the same for its baseline samples
    ttft_ms: float | None = None  # server: mean time to first token (prompt processing) per request

    def cell(self) -> tuple:
        """The setting, without run, runner and category: rows of different runs line up on it."""
        return (self.pair, self.method, self.draft_max, self.draft_min, self.p_min, self.ngl, self.ngld,
                self.ngram_size_n, self.ngram_size_m, self.parallel)  # fmt: skip

    def contract(self) -> dict:
        """Exactly the contract keys, in contract order."""
        data = self.model_dump()
        return {k: data[k] for k in CONTRACT_KEYS}


class RunInfo(BaseModel):
    """What a caption says about a run: where it ran and on which llama.cpp."""

    run: str
    path: str
    started_at: str | None = None
    machine: str = "unknown machine"
    backend: str | None = None
    commit: str | None = None
    n_samples: int = 0
    n_failed: int = 0
    n_invalid: int = 0
    status: str | None = None  # the manifest's: complete, interrupted, failed, running
    generation: list[str] = []  # the generation settings its samples used, one text each

    @property
    def incomplete(self) -> bool:
        return self.status not in (None, "complete")

    def caption(self) -> str:
        commit = (self.commit or "unknown")[:10]
        state = f" (INCOMPLETE: {self.status})" if self.incomplete else ""
        return f"{self.run}{state}: {self.machine}; backend {self.backend or 'unknown'}; llama.cpp {commit}"


class Report(BaseModel):
    runs: list[RunInfo]
    rows: list[ReportRow]  # every row, per-category ones included
    notes: list[str]

    def shown(self, by_category: bool) -> list[ReportRow]:
        return [r for r in self.rows if by_category or r.category == ALL]


def latest_run(base: Path | None = None) -> Path:
    """The newest run folder under results/ (by manifest started_at, then by name)."""
    base = base or results_dir()
    runs = run_folders(base)
    if not runs:
        raise ReportError(f"no run folders under {base}/; run `specbench run CONFIG` first or pass RUN_DIR")
    return max(runs, key=lambda p: (_started_at(p) or "", p.name))


def _started_at(run_dir: Path) -> str | None:
    try:
        return read_facts(run_dir).started_at
    except RunError:
        return None


def run_info(run: StoredRun) -> RunInfo:
    """Caption facts from the manifest (build: backend, commit; env: cpu_model, gpus)."""
    facts, samples = run.facts, run.samples
    machine = facts.machine.cpu_model or "unknown CPU"
    if facts.machine.gpus:
        machine = f"{machine} + {', '.join(facts.machine.gpus)}"
    return RunInfo(
        run=facts.run_id,
        path=str(run.path),
        started_at=facts.started_at,
        machine=str(machine),
        backend=facts.machine.backend,
        commit=facts.llama_cpp_commit,
        n_samples=len(samples),
        n_failed=sum(s.status in ("failed", "timeout") for s in samples),
        n_invalid=sum(_is_invalid(s) for s in samples),
        status=facts.status,
        generation=sorted({generation_text(s.generation) for s in samples}),
    )


def _is_invalid(s: Sample) -> bool:
    return s.status == "invalid" or (s.status == "ok" and not s.valid)


def _usable(s: Sample) -> bool:
    return s.valid and s.status == "ok" and s.tps is not None


def _pooled(samples: Iterable[Sample], num: str, den: str) -> float | None:
    """sum(metrics.num) / sum(metrics.den) over the samples whose log has both."""
    total_n = total_d = 0
    for s in samples:
        n = getattr(s.metrics, num, None) if s.metrics else None
        d = getattr(s.metrics, den, None) if s.metrics else None
        if n is not None and d is not None:
            total_n += n
            total_d += d
    return total_n / total_d if total_d > 0 else None


def _tokens_per_pass(samples: Iterable[Sample]) -> float | None:
    """sum(n_predict) / sum(n_predict - n_accept): each target pass yields its accepted tokens + 1."""
    tokens = passes = 0
    for s in samples:
        m = s.metrics
        if m and m.n_predict is not None and m.n_accept is not None:
            tokens += m.n_predict
            passes += m.n_predict - m.n_accept
    return tokens / passes if passes > 0 else None


def _throughput(samples: list[Sample]) -> float | None:
    """Server samples: tokens generated over the wall time of their batches (requests in flight
    together share one batch time), so at parallel P it is what the server delivered in aggregate."""
    batches: dict[int, float] = {}
    tokens = 0
    for s in samples:
        if s.batch is None or s.batch_wall_s is None or s.n_generated is None or not _usable(s):
            continue
        batches[s.batch] = s.batch_wall_s
        tokens += s.n_generated
    seconds = sum(batches.values())
    return tokens / seconds if seconds > 0 else None


def _row(
    run: str,
    category: str,
    spec: list[Sample],
    base: list[Sample],
    drafts: list[Sample],
    facts: RunFacts | None,
    cal: Calibration | None,
) -> ReportRow:
    first = spec[0]
    quality = assess(spec, base, facts)
    used = [s for s in spec if _usable(s)]
    base_used = [s for s in base if _usable(s)]
    b = stats.summarize([s.tps for s in base_used])
    p = stats.summarize([s.tps for s in used])
    ratio = stats.ratio_of_means([s.tps for s in used], [s.tps for s in base_used])
    acceptance = _pooled(used, "n_accept", "n_drafted")
    draft_tps = stats.summarize([s.tps for s in drafts if _usable(s)]).mean
    if first.method == "draft" or first.draft:
        c = stats.cost_ratio(b.mean, draft_tps)
    else:
        c = 0.0  # draft-free (n-gram) methods: a lookup costs nothing next to a forward pass
    predicted = best_g = None
    if acceptance is not None and c is not None and first.draft_max:
        a = min(max(acceptance, 0.0), 1.0)
        predicted = stats.predicted_speedup(a, first.draft_max, c)
        best_g = stats.best_draft_length(a, c)
    tpp = _tokens_per_pass(used)
    modelled = cell_model_speedup(
        cal, first.model, first.ngl, first.draft, first.ngld, first.draft_max, tpp, b.mean
    )
    compared = [s.outputs_match for s in spec if s.outputs_match is not None]
    diffs = [s.first_diff for s in spec if s.outputs_match is False and s.first_diff is not None]
    return ReportRow(
        run=run, pair=first.pair, target=first.model, draft=first.draft, method=first.method,
        draft_max=first.draft_max, ngl=first.ngl, ngld=first.ngld, category=category,
        baseline_tps=b.mean, baseline_tps_sd=b.sd, spec_tps=p.mean, spec_tps_sd=p.sd,
        speedup=ratio.value, speedup_ci_low=ratio.ci_low, speedup_ci_high=ratio.ci_high,
        acceptance=acceptance, tokens_per_pass=tpp, predicted_speedup=predicted,
        outputs_match=all(compared) if compared else None,
        valid=len(used) == len(spec) and len(base_used) == len(base) and bool(base),
        n=len(used), draft_min=first.draft_min, p_min=first.p_min, baseline_n=b.n,
        ngram_size_n=first.ngram_size_n, ngram_size_m=first.ngram_size_m,
        baseline_ci_low=b.ci_low, baseline_ci_high=b.ci_high, spec_ci_low=p.ci_low, spec_ci_high=p.ci_high,
        n_total=len(spec), n_invalid=sum(_is_invalid(s) for s in spec),
        n_failed=sum(s.status in ("failed", "timeout") for s in spec), draft_tps=draft_tps, cost_ratio=c,
        best_draft_max=best_g, first_diff=min(diffs) if diffs else None, model_speedup=modelled,
        **vars(quality),
        runner=first.runner,
        parallel=first.parallel, throughput_tps=_throughput(used),
        baseline_throughput_tps=_throughput(base_used),
        ttft_ms=stats.summarize([s.ttft_ms for s in used if s.ttft_ms is not None]).mean,
    )  # fmt: skip


def _cell_key(s: Sample) -> tuple:
    return (s.pair, s.model, s.draft, s.method, s.draft_max, s.draft_min, s.p_min, s.ngl, s.ngld,
            s.ngram_size_n, s.ngram_size_m, s.runner, s.parallel)  # fmt: skip


def _sort_key(value: object) -> tuple:
    return (value is None, value if value is not None else 0)


def _run_rows(
    run: str, samples: list[Sample], facts: RunFacts | None = None, cal: Calibration | None = None
) -> list[ReportRow]:
    cells: dict[tuple, list[Sample]] = {}
    for s in samples:
        if s.role == "speculative":
            cells.setdefault(_cell_key(s), []).append(s)
    baselines = [s for s in samples if s.role == "baseline"]
    drafts = [s for s in samples if s.role == "draft"]
    rows = []
    for spec in cells.values():
        first = spec[0]
        keys = {(s.prompt_id, s.repetition) for s in spec}
        base = [
            b
            for b in baselines
            if b.model == first.model
            and b.ngl == first.ngl
            and (b.runner, b.parallel) == (first.runner, first.parallel)
            and (b.prompt_id, b.repetition) in keys
        ]
        ngld = first.ngld if first.ngld is not None else 0  # the runner measures a draft alone at ngld or 0
        alone = [
            d
            for d in drafts
            if first.draft
            and d.model == first.draft
            and (d.ngl or 0) == ngld
            and (d.prompt_id, d.repetition) in keys
        ]
        rows.append(_row(run, ALL, spec, base, alone, facts, cal))
        for category in sorted({s.category for s in spec}):
            rows.append(
                _row(
                    run, category, [s for s in spec if s.category == category],
                    [b for b in base if b.category == category], [d for d in alone if d.category == category],
                    facts, cal,
                )
            )  # fmt: skip
    return rows


def _mark_best(rows: list[ReportRow], incomplete: set[str] = frozenset()) -> None:
    """★ per pair and category; an incomplete run gets none (its missing cells might have won)."""
    best: dict[tuple, ReportRow] = {}
    for r in rows:
        if r.run in incomplete:
            continue
        key = (r.run, r.pair, r.category)
        if r.speedup is not None and (key not in best or r.speedup > best[key].speedup):
            best[key] = r
    for r in best.values():
        r.best = True


def _load(run_dir: Path) -> StoredRun:
    if not run_dir.is_dir():
        raise ReportError(
            f"run folder {run_dir} does not exist; pass a folder under results/ (see `ls results`)"
        )
    if not has_samples(run_dir):
        raise ReportError(
            f"{run_dir} is not a run folder (no {samples_path(run_dir).name}); "
            f"pass a folder written by `specbench run`"
        )
    run = read_run(run_dir, manifest_required=False)
    if not run.samples:
        raise ReportError(
            f"{samples_path(run_dir)} is empty: the run recorded nothing; run it again or --resume it"
        )
    if not any(s.role == "speculative" for s in run.samples):
        raise ReportError(f"{run_dir} has no speculative samples yet; `specbench run --resume {run_dir}`")
    return run


def build_report(run_dirs: list[Path]) -> Report:
    """Every row (overall and per category) of every run, captions and the report's notes."""
    if not run_dirs:
        raise ReportError("no run folders given")
    infos, rows, expected, warnings = [], [], [], []
    for run_dir in run_dirs:
        run = _load(run_dir)
        warnings += run.warnings
        info = run_info(run)
        if any(i.run == info.run for i in infos):
            info.run = f"{info.run} ({run_dir})"
        infos.append(info)
        rows.extend(_run_rows(info.run, run.samples, run.facts, load_calibration(run_dir)))
        if run.facts.expect is not None:
            expected.append((run.facts.expect, info.run))
    order = [i.run for i in infos]
    rows.sort(
        key=lambda r: (tuple(map(_sort_key, r.cell())), r.category != ALL, r.category, order.index(r.run))
    )
    _mark_best(rows, {i.run for i in infos if i.incomplete})
    published = [published_note(expect, run, rows) for expect, run in expected]
    return Report(runs=infos, rows=rows, notes=[*warnings, *published, *_notes(infos, rows)])


def aggregate(run_dirs: list[Path], by_category: bool = False) -> list[ReportRow]:
    """The report rows: overall rows (category ``all``), plus per-category rows when asked."""
    return build_report(run_dirs).shown(by_category)


def closing_report(run_dir: Path) -> tuple[Report | None, list[str]]:
    """The report ``specbench run`` prints at its end (the very table `specbench report` prints),
    or None and the reason there is none."""
    try:
        return build_report([run_dir]), []
    except ReportError as exc:
        return None, [str(exc)]


def empty_cells(report: Report) -> list[ReportRow]:
    """Cells with no valid speculative sample or no valid baseline: they measured nothing."""
    return [r for r in report.shown(False) if r.n == 0 or r.baseline_n == 0]


def _fmt_cell(r: ReportRow) -> str:
    what = r.pair or r.target
    if r.method != "draft":
        what += f" {r.method}"
    what += "".join(f" {k[6:]} {getattr(r, k)}" for k in ("ngram_size_n", "ngram_size_m") if getattr(r, k))
    return what + (f" draft_max {r.draft_max}" if r.draft_max is not None else "")


def _notes(infos: list[RunInfo], rows: list[ReportRow]) -> list[str]:
    """One sentence per finding: the model gap, mismatched outputs, invalid or failed samples."""
    notes = []
    overall = [r for r in rows if r.category == ALL]
    modelled = [r for r in overall if r.predicted_speedup and r.speedup is not None]
    gaps = [r for r in modelled if r.speedup < GAP_FACTOR * r.predicted_speedup]
    if gaps:
        worst = min(gaps, key=lambda r: r.speedup / r.predicted_speedup)
        backends = {i.backend for i in infos}
        cause = (
            "on a CPU a pass over g+1 tokens costs far more, since its compute grows with the batch"
            if backends <= {"cpu", None}
            else "verifying g+1 tokens in one pass costs measurably more here"
        )
        notes.append(
            f"Measured speedup is below {GAP_FACTOR:.0%} of the Leviathan model's prediction in "
            f"{len(gaps)} of {len(modelled)} settings (largest gap: {_fmt_cell(worst)}, "
            f"{worst.speedup:.2f}x measured vs {worst.predicted_speedup:.2f}x predicted): the model "
            f"assumes a target pass verifying g+1 tokens costs no more than one decoding a single token, "
            f"but {cause}, and it leaves out sampling and draft bookkeeping."
        )
    mismatched = [r for r in overall if r.outputs_match is False]
    if mismatched:
        where = ", ".join(
            f"{_fmt_cell(r)} (first difference at character {r.first_diff})" for r in mismatched
        )
        notes.append(f"Speculative output differs from the baseline's in {where}.")
    notes += caveats(infos)
    for info in infos:
        if info.n_failed or info.n_invalid:
            notes.append(
                f"Run {info.run}: {info.n_failed} failed and {info.n_invalid} invalid of {info.n_samples} "
                f"samples are left out of the statistics (see the samples and raw logs in {info.path})."
            )
    return notes

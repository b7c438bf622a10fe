"""A report over run folders: every cell's rows (``specbench.analysis.cells``), the runs'
captions, the best setting per pair, and the findings worth a sentence.

The rows' quality warnings are said once per kind, naming their cells (``digest``): printed row by
row, a run of four cells ends in a wall of lines that repeat the same baseline outlier under every
cell; a reader needs each finding once, with where it holds.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from specbench.analysis.caveats import (
    Caveat,
    RunInfo,
    caveats,
    generation_text,
    machine_caveats,
    note,
    said_once,
    warning,
)
from specbench.analysis.cells import ALL, NotRun, ReportRow, cell_name, is_invalid, run_rows, sort_key
from specbench.analysis.figures import pick_best, slower, slower_text, speedup_text, standing_text
from specbench.base.errors import InputError, RunError
from specbench.base.paths import results_dir
from specbench.results.calibration import load_calibration
from specbench.results.cell import group_by
from specbench.results.folder import has_manifest, has_samples, run_folders, samples_path
from specbench.results.manifest import Expectation
from specbench.results.manifestfile import StoredRun, read_facts, read_run
from specbench.results.runstate import finish_hint
from specbench.results.samplelog import load_samples

if TYPE_CHECKING:
    from specbench.execute.benchmark import RunSummary

GAP_FACTOR = 0.7  # measured below this fraction of the prediction is a finding worth a sentence


class ReportError(InputError):
    """A run folder cannot be reported (missing, empty, not a run)."""


class Report(BaseModel):
    runs: list[RunInfo]
    rows: list[ReportRow]  # every row, per-category ones included
    caveats: list[Caveat]  # each once, warnings first (``caveats.said_once``)
    not_run: list[NotRun] = []  # cells the runs' plans left out (a draft out of its context at a depth)

    @property
    def notes(self) -> list[str]:
        """The caveats' texts, in their order (the report files' notes)."""
        return [c.text for c in self.caveats]

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
    samples = run.samples
    return RunInfo(
        run=run.facts.run_id,
        path=str(run.path),
        facts=run.facts,
        n_samples=len(samples),
        n_failed=sum(s.status in ("failed", "timeout") for s in samples),
        n_invalid=sum(is_invalid(s) for s in samples),
        n_rerun=sum(s.reruns > 0 for s in samples),
        generation=sorted({generation_text(s.generation) for s in samples}),
    )


def _mark_best(rows: list[ReportRow], incomplete: AbstractSet[str] = frozenset()) -> list[Caveat]:
    """★ per pair, category and server ``parallel`` on the cell ``figures.pick_best`` may call best
    (an incomplete run gets none: its missing cells might have won). Returns a note per overall group
    left without one (undecided, synthetic or ``figures.slower``), so no ★ is not read as an oversight."""
    kept = [r for r in rows if r.run not in incomplete]
    groups = group_by(kept, lambda r: (r.run, r.pair, r.category, r.parallel))
    notes: list[Caveat] = []
    for (run, pair, category, _), group in groups.items():
        best = pick_best(
            group, lambda r: (r.speedup, r.speedup_ci_low, r.speedup_ci_high), lambda r: r.synthetic
        )
        top = best.item
        if top is None:
            continue
        figure = speedup_text(top.speedup, top.speedup_ci_low, top.speedup_ci_high, top.speedup_repetitions)
        if best.decided and not slower(top.speedup_ci_low, top.speedup_ci_high):
            top.best = True
        elif category == ALL:
            named = f"{cell_name(top)}, {figure}"
            if best.decided:  # and slower than its baseline
                why = slower_text(f"{pair} in {run}", named)
            else:
                why = f"No setting of {pair} in {run} is marked best: its highest speedup ({named}) is "
                why += f"{standing_text(best.standing)}."
            notes.append(note(f"best:{run}:{pair}", why))
    return notes


def _load(run_dir: Path) -> StoredRun:
    if run_dir.exists() and not run_dir.is_dir():
        raise ReportError(f"{run_dir} is a file, not a run folder; pass a folder under results/")
    if not run_dir.is_dir():
        raise ReportError(
            f"run folder {run_dir} does not exist; pass a folder under results/ (see `ls results`)"
        )
    if not has_samples(run_dir) and not has_manifest(run_dir):
        raise ReportError(
            f"{run_dir} is not a run folder (no {samples_path(run_dir).name}); "
            f"pass a folder written by `specbench run`"
        )
    run = read_run(run_dir, manifest_required=False)
    if not run.samples or not any(s.role == "speculative" for s in run.samples):
        what = "recorded no sample" if not run.samples else "has no speculative sample"
        raise ReportError(f"{run_dir} {what} yet; {finish_hint(run_dir, run.facts.status)}")
    return run


def build_report(run_dirs: list[Path]) -> Report:
    """Every row (overall and per category) of every run, captions and the report's notes."""
    if not run_dirs:
        raise ReportError("no run folders given")
    infos: list[RunInfo] = []
    rows: list[ReportRow] = []
    expected: list = []
    warnings: list[Caveat] = []
    not_run: list[NotRun] = []
    for run_dir in run_dirs:
        run = _load(run_dir)
        warnings += [note(f"read:{w}", w) for w in run.warnings]
        info = run_info(run)
        if any(i.run == info.run for i in infos):
            info.run = f"{info.run} ({run_dir})"
        infos.append(info)
        cal = load_calibration(run_dir)
        run_rows_ = run_rows(info.run, run.samples, run.facts, cal)
        if run.facts.workarounds:  # every row of such a run says so: its builds ran another code path
            used = ", ".join(run.facts.workarounds)
            for r in run_rows_:
                r.warnings.append(f"workaround {used}")
            why = f"run with the self-test's workaround ({used}; see the manifest's build.selftest)"
            fix = "`specbench run --no-workarounds` runs as built"
            warnings.append(note(f"workaround:{info.run}", f"{info.run}: {why}; {fix}"))
        rows.extend(run_rows_)
        if cal is not None and any(r.model_calibration == cal.describe() for r in run_rows_):
            warnings.append(note(f"model:{info.run}", f"model column of {info.run}: {cal.describe()}"))
        curve = sorted({r.model_calibration or "" for r in run_rows_} - {""} - {cal and cal.describe()})
        if curve:
            more = f" (and {len(curve) - 1} more curves)" if len(curve) > 1 else ""
            why = f"real cells read off {curve[0]} at their acceptance length{more}"
            warnings.append(note(f"curve:{info.run}", f"model column of {info.run}: {why}"))
        if run.facts.expect is not None:
            expected.append((run.facts.expect, info.run))
        for lo in run.facts.left_out:  # named where it would have stood, never averaged in
            not_run.append(NotRun(run=info.run, cell=lo.cell, reason=lo.reason))
            warnings.append(warning(f"not-run:{info.run}:{lo.reason}", f"{info.run}: {lo.reason}"))
    order = [i.run for i in infos]
    rows.sort(
        key=lambda r: (tuple(map(sort_key, r.cell())), r.category != ALL, r.category, order.index(r.run))
    )
    unmarked = _mark_best(rows, {i.run for i in infos if i.incomplete})
    published = [note(f"published:{run}", published_note(expect, run, rows)) for expect, run in expected]
    overall = [r for r in rows if r.category == ALL]
    quality = [warning(f"quality:{line.split(' in ', 1)[0]}", line) for line in digest(overall)]
    found = [*warnings, *published, *_notes(infos, rows), *quality, *unmarked]
    return Report(runs=infos, rows=rows, caveats=said_once(found), not_run=not_run)


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


PRECISION_MARK = "† precision not met: the cell stopped at max_repetitions with a wider CI than asked"


def closing_caveats(summary: RunSummary, report: Report | None, notes: list[str]) -> list[Caveat]:
    """What a run's end says, each thing once, warnings first: the report's caveats, the run's own
    record of the same facts (in its own, more specific wording) and what only the run knows (``notes``)."""
    noise = summary.noise
    own = machine_caveats(summary.run_id, noise.busy, noise.speed.warnings, noise.speed.notes, noise.notes,
                          summary.sentinel)  # fmt: skip
    if summary.n_failed or summary.n_invalid:
        text = (
            f"{summary.n_failed} failed and {summary.n_invalid} invalid samples are left out of the "
            f"statistics; their reasons are in {samples_path(summary.run_dir)}"
        )
        own.append(warning(f"failed:{summary.run_id}", text))
    if report is not None and any(r.precision_met is False for r in report.shown(False)):
        own.append(note("precision-mark", PRECISION_MARK))
    own += [note(f"run:{n}", n) for n in notes]
    return said_once([*(report.caveats if report is not None else []), *own])


def _notes(infos: list[RunInfo], rows: list[ReportRow]) -> list[Caveat]:
    """One sentence per finding: the model gap, mismatched outputs, the runs' caveats."""
    notes: list[Caveat] = []
    overall = [r for r in rows if r.category == ALL]
    # each modelled row's measured/predicted ratio
    ratios = [(r.speedup / r.model_speedup, r) for r in overall if r.model_speedup and r.speedup is not None]
    gaps = [r for ratio, r in ratios if ratio < GAP_FACTOR]
    if gaps:
        worst = min(ratios, key=lambda rr: rr[0])[1]
        text = (
            f"Measured speedup is below {GAP_FACTOR:.0%} of the calibrated model's prediction in "
            f"{len(gaps)} of {len(ratios)} settings (largest gap: {cell_name(worst)}, "
            f"{worst.speedup:.2f}x measured vs {worst.model_speedup:.2f}x predicted): the model counts "
            "the pass costs llama-bench measured on this machine, so the gap is time outside the passes "
            "(sampling, draft bookkeeping) or a machine whose speed moved since the calibration."
        )
        notes.append(note("gap", text))
    mismatched = [r for r in overall if r.outputs_match is False]
    if mismatched:
        where = ", ".join(
            f"{cell_name(r)} (first difference at character {r.first_diff})" for r in mismatched
        )
        text = (
            f"Speculative output differs from the baseline's in {where}: verifying a batch of drafted "
            "tokens can round differently from decoding one at a time (GPU backends especially), which "
            "flips a near-tie and diverges from there; a difference in the first few characters points "
            "at the speculative path itself (the texts are in each sample's log)."
        )
        notes.append(warning("mismatch", text))
    return notes + caveats(infos)


def nothing_measured(run_dir: Path, report: Report | None) -> str | None:
    """Why the run measured nothing in some cell (a CI job must not pass on it), or None."""
    if report is None:
        return f"{run_dir} has no cell to report; see {samples_path(run_dir)}"
    empty = [r for r in report.shown(False) if r.n == 0 or r.baseline_n == 0]  # no valid sample on a side
    if not empty:
        return None
    shown = [cell_name(r) for r in empty[:3]]
    names = ", ".join(shown) + (f" and {len(empty) - 3} more" if len(empty) > 3 else "")
    return (
        f"{len(empty)} of {len(report.shown(False))} cells have no valid sample ({names}); their samples "
        f"failed, timed out or never speculated{_main_reason(run_dir)}: the reasons are in "
        f"{samples_path(run_dir)}"
    )


def _main_reason(run_dir: Path) -> str:
    """`` (most often: <reason with its cure>)`` over the run's failed samples, or ''."""
    reasons = Counter(
        (s.invalid_reason or "").removeprefix("not run: its warmup failed: ")
        for s in load_samples(run_dir)
        if s.status in ("failed", "timeout") and s.invalid_reason
    )
    return f" (most often: {reasons.most_common(1)[0][0]})" if reasons else ""


# The published figure beside the measured one, for runs whose config says what to ``expect:``.
def _figure(value: float | str, kind: str, measured: bool) -> str:
    """Published numbers as written (2.01 t/s stays 2.01); measured ones to a sensible precision."""
    if isinstance(value, str):
        return value
    if kind == "speedup":
        return f"{value:.2f}x"
    if kind == "acceptance":
        return f"{value:.1%}" if measured else f"{value:.0%}" if value <= 1 else f"{value:g}%"
    return f"{value:.1f} t/s" if measured else f"{value:g} t/s"


_WORDS = dict(speedup="speedup", acceptance="acceptance", spec_tps="speculative", baseline_tps="baseline")


def _figures(source: Expectation | ReportRow, measured: bool = False) -> str:
    """The four figures, those ``source`` has, in words."""
    found = {k: v for k in _WORDS if (v := getattr(source, k)) is not None}
    return ", ".join(f"{_WORDS[k]} {_figure(v, k, measured)}" for k, v in found.items()) or "no figure given"


def published_note(expect: Expectation, run: str, rows: list[ReportRow]) -> str:
    """One sentence: what was published for the setup, then the run's best cell in the same terms."""
    source = f" ({expect.source})" if expect.source else ""
    text = f"Published for this setup{source}: {_figures(expect)}."
    if expect.note:
        text += f" {expect.note.rstrip('.')}."
    mine = [r for r in rows if r.run == run and r.category == "all" and r.speedup is not None]
    pick = pick_best(mine, lambda r: (r.speedup, r.speedup_ci_low, r.speedup_ci_high), lambda r: r.synthetic)
    best = pick.item
    if best is None:
        return text + f" Run {run} has no valid speculative cell to set beside it."
    which = "best cell" if pick.decided else f"highest cell, {pick.standing}"  # the one rule (figures.py)
    return text + f" Measured in {run} ({which}, {cell_name(best)}): {_figures(best, measured=True)}."


# digest leaves out what is said once elsewhere: busy machine loudly on its own line; a build's
# workaround by the report's note for its run (every row of that run carries it: said a second time)
SKIPPED = ("busy machine", "workaround")
_REPS = re.compile(r"after (\d+) repetitions")
_PRECISION = re.compile(r"precision (\d+(?:\.\d+)?)%")


def _cell_among(r: ReportRow, rows: list[ReportRow]) -> str:
    """A cell as a reader tells it from the others of the report (``analysis.cells.cell_name``),
    plus the server's parallel requests and the run when the report has more than one of them."""
    name = cell_name(r)
    if len({x.parallel for x in rows}) > 1:
        name += f" parallel {r.parallel}"
    if len({x.run for x in rows}) > 1:
        name += f" ({r.run})"
    return name


def digest(rows: list[ReportRow]) -> list[str]:
    """One line per kind of warning, in the order kinds first appear."""
    by_kind: dict[str, list[tuple[ReportRow, str]]] = defaultdict(list)
    for r in rows:
        for w in r.warnings:
            kind, _, detail = w.partition(": ")
            if not kind.startswith(SKIPPED):
                by_kind[kind].append((r, detail))
    lines = []
    for kind, found in by_kind.items():
        cells = f"{len(found)} of {len(rows)} cells" if len(rows) > 1 else "the cell"
        if kind == "imprecise":
            lines.append(_imprecise(found, rows, cells))
            continue
        details = list(dict.fromkeys(d for _, d in found))
        if len(details) == 1:  # the same finding under every cell (their shared baseline): said once
            names = ", ".join(_cell_among(r, rows) for r, _ in found)
            lines.append(f"{kind} in {cells} ({names}): {details[0]}")
        else:
            each = "; ".join(f"{_cell_among(r, rows)}: {d}" for r, d in found)
            lines.append(f"{kind} in {cells}: {each}")
    return lines


def _imprecise(found: list[tuple[ReportRow, str]], rows: list[ReportRow], cells: str) -> str:
    """Which cells miss the precision, by how much, and the repetitions that would meet it: the CI
    half-width shrinks with the square root of the repetitions, so n x (CI / precision)^2."""
    widths = []
    for r, _ in found:
        sides = (("spec", r.spec_tps_rel_ci), ("baseline", r.baseline_tps_rel_ci))
        shown = ", ".join(f"{side} ±{v:.1%}" for side, v in sides if v is not None)
        widths.append(f"{_cell_among(r, rows)} {shown}")
    detail = found[0][1]
    reps = int(m.group(1)) if (m := _REPS.search(detail)) else None
    target = float(m.group(1)) / 100 if (m := _PRECISION.search(detail)) else None
    worst = max((v for r, _ in found for v in (r.spec_tps_rel_ci, r.baseline_tps_rel_ci) if v), default=None)
    line = f"imprecise in {cells} ({'; '.join(widths)}): the 95% CI is wider than"
    line += f" precision {target:.1%}" if target else " the precision"
    line += f" after {reps} repetitions" if reps else ""
    if reps and target and worst:
        need = math.ceil(reps * (worst / target) ** 2)
        if need > 100:
            line += (
                f"; about {need} repetitions would meet it on this machine: longer decode windows "
                f"(--set generation.n_predict=...) or a looser precision (--set precision={worst:.2f}) "
                "are the way"
            )
        else:
            line += f"; about {need} would meet it: --set repetitions=auto --set max_repetitions={need}"
    return line

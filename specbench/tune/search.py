"""``specbench tune``: the best draft settings for one pair, measured, within a time budget.

Successive halving guided by the calibrated speed model (docs/tune.md): a probe (the baseline and
draft_max 8, one repetition), a llama-bench calibration at the prompts' KV depth, every candidate
predicted (``tune.candidates``), then the model's best few measured and the better half kept and
measured again until one is left or the budget ends. Every round measures the baseline again under
the round's repetition number, so a speedup pairs with the baseline of the same minutes and a
drifting machine does not inflate the winner. All of it is one run folder that ``report`` shows;
the winner is handed over as llama-speculative-simple's and llama-server's command lines.
"""

from __future__ import annotations

import math
import shlex
import time
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path

from specbench.analysis.figures import Standing, pick_best
from specbench.analysis.speedmodel import diagnose
from specbench.base import interrupts
from specbench.base.errors import RunError, SpecbenchError
from specbench.base.formats import now_iso
from specbench.base.llamaopts import GPU_LAYERS
from specbench.base.paths import remove_empty
from specbench.builder.workaround import with_workaround
from specbench.execute import benchmark, preparation
from specbench.execute.benchmark import sentinel as make_sentinel
from specbench.execute.runner import ProgressFn, RunInterrupted, execute
from specbench.gate.baseline import load_run
from specbench.gate.history import HistoryPoint, load_history, series_of
from specbench.gate.historydb import record_run
from specbench.machine import envinfo, noise
from specbench.machine.noise import NoiseRecord
from specbench.plan.cells import free_args, option_axes, option_flags, speculative_flags
from specbench.plan.config import Config
from specbench.results.calibration import Calibration, save_calibration
from specbench.results.cell import Cell
from specbench.results.folder import has_manifest, has_samples
from specbench.results.manifest import Manifest, Status
from specbench.results.manifestfile import save_manifest
from specbench.results.samplelog import load_samples
from specbench.tune.budget import (
    TAIL_S,
    BudgetTooSmall,
    Clock,
    RunCosts,
    check_history_floor,
    per_run,
    plan_calibration,
)
from specbench.tune.calibrate import CalibrationTimeout, bench_depth, calibrate, depth_note, pass_sizes, store
from specbench.tune.candidates import Candidate, Setting, candidates, first_round, predict
from specbench.tune.rounds import draft_rows, invocations, kv_depth, nothing_measured, round_config
from specbench.tune.setup import bench_options, choose_options, pick_pair, tune_config, tuned_draft

PROBE_DRAFT = 8
FIRST_ROUND = 2  # candidates measured after the probe, at most
MAX_REPS = 2  # rounds the winner is measured in (with the probe); a third cost 20% more time


@dataclass(frozen=True)
class BaselineDrift:
    """Tune's baseline beside the same baseline in this machine's other runs (history): a later run
    can find it at another level than tune's few minutes saw (docs/tune.md), and a speedup moves with
    it; the range of their levels, applied to tune's speedup, is what a later run here may measure if
    the spec t/s holds."""

    runs: int  # other runs of this machine that measured the same baseline
    low_tps: float  # the lowest and highest of their baseline t/s (mean over prompts and repetitions)
    high_tps: float
    tune_tps: float  # tune's own, measured the same way
    speedup_low: float  # the best setting's speedup at those two levels, if its spec t/s held
    speedup_high: float

    def outside(self, ci_low: float | None, ci_high: float | None) -> bool:
        """Whether those levels put the speedup beyond tune's own interval (then tune says so)."""
        if ci_low is None or ci_high is None:
            return True
        return self.speedup_low < ci_low or self.speedup_high > ci_high

    def widened(self, ci_low: float | None, ci_high: float | None) -> tuple[float, float]:
        """Tune's interval widened to the speedup at those levels: what a later run here may measure."""
        low = min(x for x in (ci_low, self.speedup_low) if x is not None)
        return low, max(x for x in (ci_high, self.speedup_high) if x is not None)


def record_and_compare(
    run_dir: Path, speedup: float | None, db_path: Path | None = None, notes: list[str] | None = None
) -> BaselineDrift | None:
    """Record tune's run in history (as ``run`` records its runs) and compare its baseline with the
    same baseline's other runs there; None when history has none or tune measured no speedup."""
    record_run(run_dir, db_path, notes)
    facts = load_run(run_dir).facts
    points = load_history(db_path, "baseline_tps")
    mine = [p for p in points if p.run_id == facts.run_id and p.started_at == facts.started_at]
    if speedup is None or len(mine) != 1 or mine[0].mean <= 0:
        return None
    tune_point = mine[0]

    def identity(p: HistoryPoint) -> tuple:  # history's series, and the same threads and llama.cpp build
        return (*series_of(p), p.threads, p.commit)

    others = [
        p.mean for p in points if p is not tune_point and identity(p) == identity(tune_point) and p.mean > 0
    ]
    if not others:
        return None
    low, high = min(others), max(others)
    b = tune_point.mean
    return BaselineDrift(len(others), low, high, b, speedup * b / high, speedup * b / low)


@dataclass
class TuneResult:
    pair: str
    run_dir: Path
    candidates: list[Candidate]
    best: Candidate | None
    calibration: Calibration | None
    baseline_tps: float | None
    command: str | None
    server_command: str | None
    no_gain: str | None  # why nothing beats the baseline, as the model sees it
    elapsed_s: float
    rounds: list[str] = field(default_factory=list)
    noise: NoiseRecord = field(default_factory=NoiseRecord)  # manifest.noise, as RunSummary's
    sentinel: str | None = None  # the sentinel's readings in a line: what they cost of the tune
    cache_note: str | None = None  # why the calibration was not cached
    drift: BaselineDrift | None = None  # the same baseline in this machine's other runs (history)
    history_notes: list[str] = field(default_factory=list)  # what recording in history left out or why not
    standing: Standing = Standing.NOTHING  # whether ``best`` is decided (analysis.figures.pick_best)


def _look(manifest: Manifest, phase: str) -> list[str]:
    """A noise snapshot (specbench idle: CPU sampled) into the manifest; what makes the machine busy now."""
    snap = noise.snapshot(phase, now_iso(), idle=True)
    noise.record(manifest.noise, snap)
    return noise.judge(snap)


def tune(
    config: Config,
    pair: str | None,
    budget_s: float,
    run_dir: Path,
    *,
    max_draft: int,  # the longest draft_max to consider (`specbench tune --max-draft` sets it)
    progress: ProgressFn | None = None,
    note: Callable[[str], None] = lambda line: None,
    command_line: list[str] | None = None,
) -> TuneResult:
    """Find the fastest draft setting of ``pair`` in at most ``budget_s`` seconds, all of it counted;
    on Ctrl-C the manifest says ``interrupted`` and RunInterrupted says what was kept."""
    clock = Clock(budget_s)
    pair = pick_pair(config, pair)
    base = tune_config(config, pair)
    ngl = base.sweep.ngl[0]
    gpu = bool(envinfo.gpus()) and base.builds[0].backend != "cpu"  # the draft's layers: tuned on a GPU
    ngld_values = sorted(set(base.sweep.ngld)) if gpu else [0]
    every = candidates(base, ngl, ngld_values, max_draft)
    probe_g = min(PROBE_DRAFT, max_draft)
    probe = [s for s in every if s.ngld == ngld_values[-1] and s.draft_max == max(probe_g, s.draft_min)]
    made = None if run_dir.exists() else run_dir
    benchmark.prepare_run_dir(run_dir, False)
    try:
        prepared = preparation.prepare(round_config(base, probe, 1, base.warmup))
        check_history_floor(clock, prepared, note)
    except BaseException:  # refused or interrupted before anything ran: leave no empty folder
        remove_empty(run_dir, made)
        raise
    manifest = benchmark.make_manifest(prepared, run_dir, command_line or [])
    result = TuneResult(pair, run_dir, [], None, None, None, None, None, None, 0.0)
    try:
        _search(base, prepared, manifest, result, clock, every, probe, ngld_values, max_draft, progress, note)
    except RunInterrupted:
        raise  # execute recorded it
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP between the rounds (calibration...)
        reason = interrupts.describe(exc)
        _record_end(run_dir, manifest, "interrupted", reason)
        if not has_manifest(run_dir):
            remove_empty(run_dir, made)
        kept = len(load_samples(run_dir)) if has_samples(run_dir) else 0
        raise RunInterrupted(run_dir, kept, reason, interrupts.exit_code(exc)) from None
    except Exception as exc:  # any other end (an OSError, a bug) is recorded too, with its type
        why = str(exc) if isinstance(exc, SpecbenchError) else f"{type(exc).__name__}: {exc}"
        _record_end(run_dir, manifest, "failed", why)
        raise
    result.noise, result.sentinel = manifest.noise, manifest.noise.speed.describe(clock.elapsed())
    try:  # recorded like run's runs; a sweep measured at another baseline level shows here
        result.drift = record_and_compare(
            run_dir, result.best.speedup if result.best else None, notes=result.history_notes
        )
    except SpecbenchError as exc:
        result.history_notes.append(f"not recorded in history: {exc}")
    result.elapsed_s = clock.elapsed()
    return result


def _record_end(run_dir: Path, manifest: Manifest, status: Status, reason: str | None) -> None:
    if not has_manifest(run_dir):
        return  # nothing ran yet: no run to record
    manifest.mark_finished(status, reason)
    with suppress(RunError):  # a full disk: the error that ended the run is the one to show
        save_manifest(run_dir, manifest)


def _search(base: Config, prepared: preparation.Prepared, manifest: Manifest, result: TuneResult,
            clock: Clock, every: list[Setting], probe: list[Setting], ngld_values: list[int], max_draft: int,
            progress: ProgressFn | None, note: Callable[[str], None]) -> None:  # fmt: skip
    run_dir, pair = result.run_dir, result.pair
    p, draft = base.pairs[pair], tuned_draft(base, pair)
    ngl = base.sweep.ngl[0]
    rounds: Counter[tuple] = Counter()  # setting -> rounds it was measured in
    prompts = prepared.prompts

    spent: list[float] = []  # seconds per measured run of each round, everything counted
    speed = manifest.noise.speed
    sentinel = make_sentinel(
        prepared.plan.sentinel, run_dir, speed, base.precision, manifest.run_id, off=not base.sentinel
    )

    def measure(settings: list[Setting], first_round: bool = False, only: list[str] | None = None) -> None:
        rep = len(result.rounds)  # one repetition number per round, the baseline's included
        cfg = round_config(base, settings, 1, base.warmup if first_round else 0)
        manifest.config = cfg.model_dump(mode="json")
        plan = invocations(cfg, prepared, settings, rep)
        if only is not None:  # the probe in two parts: its first prompt prices the rest of the search
            plan = plan.only([i for i in plan.invocations if i.prompt_id in only])
        t0 = time.monotonic()
        execute(plan, run_dir, manifest, progress=progress, resume=has_samples(run_dir),
                observe=lambda phase, n: sentinel.maybe() if phase == "during" else None)  # fmt: skip
        spent.append((time.monotonic() - t0) / max(1, len(plan.measured)))
        if only is None or only[-1] == prompts[-1].id:
            rounds.update(st.key() for st in settings)
            names = ", ".join(st.label() for st in settings)
            result.rounds.append(f"round {rep + 1}: baseline and {names}")

    _look(manifest, "before")  # the CLI prints what the noise check found (manifest.noise) at the end
    sentinel.read("before")
    probed = ", ".join(st.label() for st in probe)
    if len(combos := option_axes(base, pair, [])) > 1:  # llama.cpp options first (tune.setup)
        note(f"options: baseline and {probed} for each of {len(combos)} combinations of llama.cpp options")
        measure(probe, first_round=True)
        base, choice = choose_options(base, pair, run_dir)
        rounds.clear()
        note("options: chose " + " ".join(f"{k}={v}" for k, v in choice.items()) + " (fastest spec t/s)")
    note(f"probe: baseline and {probed} over {len(prompts)} prompt(s)")
    measure(probe, first_round=True, only=[prompts[0].id])
    if not any(s.valid for s in load_samples(run_dir)):  # not one sample: no budget to plan from either
        raise RunError(nothing_measured(run_dir))
    costs = RunCosts.from_samples(load_samples(run_dir))
    depth = kv_depth(run_dir, base.generation.n_predict)
    plan = plan_calibration(clock, costs, depth, max_draft, 1 + len(ngld_values),
                            (len(prompts) - 1) * (1 + len(probe)), len(prompts) * 2)  # fmt: skip
    if len(prompts) > 1:
        measure(probe, only=[q.id for q in prompts[1:]])
    depth = kv_depth(run_dir, base.generation.n_predict)
    combo = option_axes(base, pair, [])[0]
    rows = draft_rows(run_dir, combo)
    if not any(r.speedup is not None for r in rows.values()):
        raise RunError(nothing_measured(run_dir))  # before calibrating: there is nothing to tune
    if (why := depth_note(prepared.build, depth)) is not None:
        note(why)
    depth = bench_depth(prepared.build, depth)
    note(
        f"calibrate: llama-bench passes of {len(pass_sizes(max_draft, plan.level))} sizes up to "
        f"{max_draft + 1} tokens at KV depth {depth}, {plan.reps} repetition(s) "
        f"(about {plan.seconds:.0f} s; nothing when cached)"
    )
    tm, dm = prepared.models[p.target], prepared.models[draft]
    busy = _look(manifest, "during")  # judges the calibration: it is cached only if the machine is quiet

    def cost(n_settings: int) -> float:
        """A round (the baseline and each setting, every prompt) at what rounds cost so far, and the
        end's checks: so the command ends within the budget."""
        return len(prompts) * (1 + n_settings) * per_run(spent) + TAIL_S + sentinel.last_wall()

    # llama-bench may take what the budget leaves after one round and the end (its estimate is a
    # guess, and a busy machine slows it): past that, tune stops and says so rather than overrun
    allowed = clock.left() - cost(1)
    if allowed <= 0:
        least = math.ceil((clock.elapsed() + plan.seconds + cost(1)) * 1.1)
        raise BudgetTooSmall(
            f"--budget {clock.budget_s:g} is spent before calibration ({clock.elapsed():.0f} s so far): "
            f"give --budget {least} or more"
        )
    opts_t, opts_d = bench_options(base, pair, prepared.build)  # llama-bench times the same options
    bench = [(p.target, str(tm.path), getattr(tm, "sha256", None), ngl, opts_t)]
    bench += [(draft, str(dm.path), getattr(dm, "sha256", None), nd, opts_d) for nd in ngld_values]
    try:
        calibrated = calibrate(
            prepared.build, bench, max_draft=max_draft, depth=depth, threads=base.generation.threads,
            reps=plan.reps, level=plan.level, timeout_s=allowed,
            limit=f"what --budget {clock.budget_s:g} leaves for calibration after the probe",
        )  # fmt: skip
    except CalibrationTimeout as exc:
        raise BudgetTooSmall(
            f"{exc}; expected about {plan.seconds:.0f} s (a busy machine slows llama-bench): the probe's "
            f"samples are kept in {run_dir}; give a larger --budget"
        ) from exc
    cal = calibrated.calibration
    if calibrated.fresh:
        busy += _look(manifest, "during")
        refusal = calibrated.refusal(busy)
        if refusal is None:
            for entry in calibrated.fresh:
                store(entry)
        else:
            result.cache_note = f"calibration not cached: {refusal}"
    save_calibration(run_dir, cal)
    save_manifest(run_dir, manifest)
    result.calibration = cal
    cands = {s.key(): Candidate(s) for s in every}

    def update() -> None:
        rows.update(draft_rows(run_dir, combo))
        measured = [r for r in rows.values() if r.tokens_per_pass is not None]
        bases = [r.baseline_tps for r in measured if r.baseline_tps]
        result.baseline_tps = sum(bases) / len(bases) if bases else None
        predict(cands, rows, cal, p.target, draft, ngl, result.baseline_tps)

    update()

    ranked = [c.setting for c in sorted(cands.values(), key=lambda c: -(c.model_speedup or 0))]
    k = FIRST_ROUND
    while k > 1 and not clock.affordable(cost(k) + cost(1)):  # leave room to measure the winner again
        k -= 1
    top = first_round(ranked, set(rounds), k)
    if top and clock.affordable(cost(len(top))):
        measure(top)
        update()
    field_ = [c for c in cands.values() if c.n > 0]
    while field_:
        field_.sort(key=lambda c: -(c.speedup or 0))
        field_ = field_[: max(1, math.ceil(len(field_) / 2))]
        done = len(field_) == 1 and rounds[field_[0].setting.key()] >= MAX_REPS
        if done or not clock.affordable(cost(len(field_))):
            break
        measure([c.setting for c in field_])
        update()
    _look(manifest, "after")
    sentinel.read("after")
    save_manifest(run_dir, manifest)
    _finish(result, base, prepared, cands, cal, ngl)


def choose(measured: list[Candidate]) -> tuple[Candidate, Standing]:
    """The fastest decided candidate (``analysis.figures.pick_best``); with none decided, the fastest
    survivor of the last round, named undecided."""
    figure = lambda c: (c.speedup, c.speedup_ci_low, c.speedup_ci_high)  # noqa: E731
    decided = pick_best(measured, figure)
    if decided.decided and decided.item is not None:
        return decided.item, decided.standing
    most = max(c.n for c in measured)  # the survivors of the last round: the most repetitions
    return max((c for c in measured if c.n == most), key=lambda c: c.speedup or 0.0), Standing.UNDECIDED


def _finish(
    result: TuneResult, base: Config, prepared: preparation.Prepared, cands: dict, cal: Calibration, ngl: int
) -> None:
    measured = [c for c in cands.values() if c.speedup is not None]
    result.candidates = sorted(cands.values(), key=lambda c: c.setting.key())
    if not measured:
        return
    result.best, result.standing = choose(measured)
    best = result.best
    p = base.pairs[result.pair]
    # the one-shot command is llama-speculative-simple's, whichever runner measured
    result.command = speculative_command(prepared, base, best.setting)
    result.server_command = server_command(prepared, base, best.setting, result.pair)
    if best.speedup is not None and best.speedup <= 1.0:  # measured: never None
        target, draft = cal.costs(p.target, ngl), cal.costs(tuned_draft(base, result.pair), best.setting.ngld)
        top = max(cands.values(), key=lambda c: c.model_speedup or 0)
        if target and draft and top.tokens is not None and top.drafted is not None:
            result.no_gain = diagnose(target, draft, top.drafted, top.tokens, result.baseline_tps)


def speculative_command(prepared: preparation.Prepared, base: Config, s: Setting) -> str:
    """llama-speculative-simple as a process round runs setting ``s``, the prompt left to ``$PROMPT``."""
    cfg = round_config(base, [s], 1, 0).model_copy(update={"runner": "process"})
    plan = invocations(cfg, prepared, [s])
    spec = next(i for i in plan.invocations if i.role == "speculative")
    argv = ["PROMPT" if a == spec.prompt_text else a for a in spec.argv]
    return shlex.join(argv).replace("PROMPT", '"$PROMPT"')


def server_command(prepared: preparation.Prepared, base: Config, s: Setting, pair: str) -> str:
    """llama-server with the same models, settings and llama.cpp options (spelled as its --help does)."""
    target, draft = base.pairs[pair].target, tuned_draft(base, pair)
    server = prepared.build.binaries.get("server")
    spec = prepared.build.speculative(base.speculative_role)
    f = server.flags if server is not None and server.flags.draft_max else spec.flags
    gen = base.generation
    argv = [*(server.argv0 if server else ["llama-server"]), "-m", str(prepared.models[target].path),
            "-c", str(gen.ctx_size), GPU_LAYERS.spellings[0], str(s.ngl)]  # fmt: skip
    if gen.threads is not None:
        argv += ["-t", str(gen.threads)]
    cell = Cell(model=target, draft=draft, **asdict(s), **option_axes(base, pair, [])[0])
    argv += speculative_flags(f, cell, str(prepared.models[draft].path))
    if server is not None:
        argv += option_flags(server, cell, free_args(base, cell))
        # the build's self-test workaround (--no-repack where the AMX repack crashed), as every run
        # of this build gets it: a printed command without it crashes where the user pastes it
        argv = with_workaround(argv, prepared.build, "server")
    return shlex.join(argv)

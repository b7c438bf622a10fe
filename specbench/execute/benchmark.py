"""The whole of ``specbench run`` as library calls: a ``Prepared`` run -> execute -> summary. The
CLI only renders what these return. A resume must match the config, the machine and the shard it
was begun with: checked before anything is built or fetched, and again by ``run_benchmark``.

The speed sentinel's reading (``specbench.machine.speed.Sentinel`` decides when) is ``Plan.sentinel``
run by the process executor into ``<run>/sentinel/raw/`` and judged like a sample; the run's samples
tell the sentinel how long a pair spans and, at the end, the baseline windows.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specbench.base.errors import RunError
from specbench.base.formats import epoch_seconds, now_iso
from specbench.execute.executor import ProcessExecutor
from specbench.execute.judge import judge
from specbench.execute.preparation import Prepared
from specbench.execute.runner import ProgressFn, execute, pair_key, prepare_run_dir
from specbench.machine.noise import NoiseRecord, NoiseWatch
from specbench.machine.speed import Sentinel, SpeedRecord
from specbench.models.spec import ResolvedModel
from specbench.results.bracket import baseline_windows
from specbench.results.cell import baseline_of
from specbench.results.folder import has_manifest, has_samples, make_run_id, resume_command
from specbench.results.manifest import Manifest, machine_differences
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples

if TYPE_CHECKING:
    from specbench.builder.buildinfo import BuildInfo
    from specbench.execute.adaptive import AdaptivePlan
    from specbench.plan.config import Config
    from specbench.plan.invocation import Invocation, Plan
    from specbench.plan.shards import Shard
    from specbench.results.records import Sample


@dataclass
class RunSummary:
    """The end of a run: where it is and how it ended (its table comes from specbench.analysis)."""

    run_dir: Path
    run_id: str
    n_samples: int
    n_new: int
    n_failed: int
    n_invalid: int
    noise: NoiseRecord = field(default_factory=NoiseRecord)  # manifest.noise: busy, notes, speed's warnings
    rounds: int = 0  # extra rounds of `repetitions: auto` (of `ab`: of the paired gate)
    budget_spent: bool = False  # `ab --budget`: a round was wanted when the budget was spent
    most_repetitions: int = 0  # the most a cell could get in rounds (0: no rounds)
    sentinel: str | None = None  # the sentinel's readings in a line: what they cost of this run


def left_to_run(prepared: Prepared, run_dir: Path, force: bool = False) -> None:
    """A dry run of ``--resume``: the refusals the real resume makes, then the plan keeps only what
    it would still measure (with ``repetitions: auto``, the rounds already begun too), with notes
    on how much is recorded already."""
    from specbench.results.runlock import lock_holder
    from specbench.results.runstate import finish_hint

    if lock_holder(run_dir) is not None:
        raise RunError(f"{run_dir}: {finish_hint(run_dir, 'running')}; a resume would be refused")
    check_resume_config(run_dir, prepared.config)
    check_resume_machine(run_dir, force)
    warnings: list[str] = []
    samples = load_samples(run_dir, warnings) if has_samples(run_dir) else []
    done = {s.sample_key() for s in samples}
    plan = prepared.plan
    if prepared.config.auto_repetitions and samples:  # a round begun before the interruption goes on
        plan.invocations = _with_begun_rounds(plan, _adaptive(prepared), samples).invocations
    planned = len(plan.measured)
    plan.invocations = plan.left(done)
    left = len(plan.measured)
    plan.notes += warnings  # each names the samples file
    if not left:
        plan.notes.append(f"{run_dir}: every planned sample is recorded already; nothing left to run")
    else:
        plan.notes.append(
            f"{run_dir}: {planned - left} of {planned} planned samples are recorded already; only the "
            f"{left} left are listed"
        )
    if prepared.config.auto_repetitions:
        plan.notes.append(
            "repetitions: auto: whether more rounds follow is decided from the samples as the run goes"
        )


def new_run_dir(config: Config, out: Path | None) -> Path:
    """``results/<YYYYmmdd-HHMMSS>-<name>/`` unless ``--out`` says otherwise."""
    from specbench.base.paths import check_path, inside, results_dir

    if out is not None:
        return Path(out)
    run_dir = inside(results_dir(), make_run_id(config.name), what="run folder")
    check_path(run_dir, "run folder (named after the config's `name:`; pass --out DIR or shorten the name)")
    return run_dir


def make_manifest(prepared: Prepared, run_dir: Path, command_line: list[str]) -> Manifest:
    from specbench.builder.toolkit import detect_backend
    from specbench.machine.envinfo import collect

    cfg = prepared.config
    return Manifest(
        run_id=run_dir.name, name=cfg.name, config_path=str(cfg.path) if cfg.path else None,
        config=cfg.model_dump(mode="json"), build=prepared.build, models=prepared.models,
        env=collect(detect_backend),
        builds={label: b for label, b in prepared.builds.items() if label is not None},
        pair_checks=prepared.pair_checks, command_line=command_line, runner=cfg.runner,
        **_shard_facts(prepared),
    )  # fmt: skip


def _shard_facts(prepared: Prepared) -> dict[str, Any]:
    s = prepared.sharding
    if s is None:
        return {}
    return {"shard": s.shard.label, "shard_cells": s.cells, "plan_cells": s.plan_cells, "plan_id": s.plan_id}


def run_benchmark(
    prepared: Prepared,
    run_dir: Path,
    resume: bool = False,
    progress: ProgressFn | None = None,
    command_line: list[str] | None = None,
    strict: bool = False,
    undecided: Any = None,
    force: bool = False,
    budget_s: float | None = None,
) -> RunSummary:
    """Execute a prepared plan into ``run_dir`` (or continue it) and summarise it.

    ``strict``: a busy machine is an error, not a warning. With ``repetitions: auto`` more rounds
    follow (``execute.adaptive``); ``undecided`` (``ab``'s paired gate) replaces their precision rule
    whatever ``repetitions`` says, within ``budget_s`` seconds. ``force``: resume a run made on
    another machine.
    """
    prepare_run_dir(run_dir, resume)
    cfg = prepared.config
    if resume and has_manifest(run_dir):
        manifest = load_manifest(run_dir)
        check_same_config(manifest, cfg, run_dir)
        check_same_machine(manifest, run_dir, force)
        check_same_builds(manifest.builds, prepared.builds, run_dir)
        # a resumed run is a real one: every model resolved (PlannedModel is a dry run's)
        manifest.build = prepared.build
        manifest.models = {n: m for n, m in prepared.models.items() if isinstance(m, ResolvedModel)}
        manifest.builds = {label: b for label, b in prepared.builds.items() if label is not None}
    else:
        manifest = make_manifest(prepared, run_dir, command_line or [])
    plan, adaptive = prepared.plan, None
    recorded = load_samples(run_dir) if resume and has_samples(run_dir) else None  # read once, here
    done = {s.sample_key() for s in recorded or ()}
    speed = manifest.noise.speed
    # a resume with every planned sample recorded (and no later round to plan) reads no speed
    nothing_left = recorded is not None and not cfg.auto_repetitions and not plan.left(done)
    reference = None if nothing_left else plan.sentinel
    reading = sentinel(reference, run_dir, speed, cfg.precision, manifest.run_id, off=not cfg.sentinel)
    watch = NoiseWatch(manifest.noise, strict, sentinel=reading)
    watch.check("before")  # --strict refuses before anything is written
    if cfg.auto_repetitions or undecided is not None:
        adaptive = _adaptive(prepared, budget_s is not None)
        adaptive.undecided = undecided
        if budget_s is not None:
            adaptive.deadline = time.monotonic() + budget_s
        if recorded is not None:
            plan = _with_begun_rounds(plan, adaptive, recorded)
    started = time.monotonic()
    if adaptive:  # the pace that sizes the next round: of what this session runs, not what was recorded
        adaptive.started(len(plan.left(done)))
    result = execute(
        plan, run_dir, manifest, progress=progress, resume=resume,
        extend=adaptive.next_round if adaptive else None, observe=watch,
    )  # fmt: skip
    run_s = time.monotonic() - started
    samples = result.samples
    summary = RunSummary(
        run_dir=run_dir, run_id=manifest.run_id, n_samples=len(samples),
        n_new=result.n_new, n_failed=sum(s.status in ("failed", "timeout") for s in samples),
        n_invalid=sum(s.status == "invalid" for s in samples), noise=manifest.noise,
    )  # fmt: skip
    # a resumed run's readings span several runs; `sentinel: false` is said by the closing report
    summary.sentinel = None if speed.off else speed.describe(run_s if not resume else None)
    if adaptive:
        summary.rounds, summary.budget_spent = adaptive.rounds, adaptive.budget_spent
        summary.most_repetitions = adaptive.maximum
    return summary


def _with_begun_rounds(plan: Plan, adaptive: AdaptivePlan, samples: list[Sample]) -> Plan:
    """``plan`` and the repetitions of ``repetitions: auto`` rounds that an interruption cut short."""
    keys = {i.sample_key() for i in plan.invocations}
    more = [i for i in adaptive.resume_plan(samples) if i.sample_key() not in keys]
    return plan.only([*plan.invocations, *more])


def _adaptive(prepared: Prepared, budget: bool = False):
    """The plan of every repetition up to ``Config.round_limit``, to cut rounds from."""
    from specbench.execute.adaptive import AdaptivePlan
    from specbench.plan.sweep import make_plan

    cfg = prepared.config
    most = cfg.round_limit(budget)
    full = make_plan(cfg, prepared.builds, prepared.models, prepared.prompts, repetitions=most)
    if prepared.roles is not None:  # ab/bisect: the later rounds measure what the first did
        full = full.of_roles(prepared.roles)
    if prepared.sharding is not None:  # the later rounds of a shard repeat its own cells only
        from specbench.plan.shards import restrict

        full = restrict(full, prepared.sharding.shard, prepared.sharding.cells)
    return AdaptivePlan(full.measured, cfg.precision, most)


def resumed_shard(run_dir: Path) -> Shard | None:
    """The shard a run folder measures (``--resume`` goes on with the same part of the plan)."""
    from specbench.plan.shards import Shard, parse_shard

    manifest = load_manifest(run_dir) if has_manifest(run_dir) else None
    if manifest is None or not manifest.shard:
        return None
    shard = parse_shard(manifest.shard)
    return Shard(shard.index, shard.count, tuple(manifest.shard_cells) if manifest.shard_cells else None)


def check_resume_machine(run_dir: Path, force: bool) -> None:
    """``--resume`` on another machine is refused before anything is built or fetched (unless
    ``force``); run_benchmark checks again and records a forced resume."""
    if not force and has_manifest(run_dir):
        check_same_machine(load_manifest(run_dir), run_dir, force)


def check_resume_config(run_dir: Path, config: Config) -> None:
    """``--resume`` (or ``ab --out`` an existing folder) with another config is refused before
    anything is built; run_benchmark checks again."""
    if has_manifest(run_dir):
        check_same_config(load_manifest(run_dir), config, run_dir)


def check_same_machine(manifest: Manifest, run_dir: Path, force: bool) -> None:
    """Resuming on another machine would mix two machines' numbers in one run: refused, or with
    ``force`` recorded in the manifest (the report then warns)."""
    from specbench.builder.toolkit import detect_backend
    from specbench.machine.envinfo import collect

    differ = machine_differences(manifest.env, collect(detect_backend))
    if not differ:
        return
    if not force:
        raise RunError(
            f"{run_dir} was made on another machine ({'; '.join(differ)}): resuming here would mix "
            "two machines' numbers in one run; resume it there, start a new run, or continue anyway "
            f"with `{resume_command(run_dir, '--force')}`"
        )
    manifest.other_machines.append("; ".join(differ))


def check_same_config(manifest: Manifest, config: Config, run_dir: Path) -> None:
    """Resuming with another config would mix two experiments in one run folder."""
    from pydantic import ValidationError

    from specbench.base.redact import redact_data
    from specbench.plan.config import Config

    now = redact_data(config.model_dump(mode="json"))  # as the manifest recorded it
    try:  # keys added since the run was made (their defaults) must not count as a difference
        then = Config.model_validate(manifest.config).model_dump(mode="json")
    except ValidationError:
        then = manifest.config
    differ = sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k))
    if differ:
        raise RunError(
            f"{run_dir} was run with a different config ({', '.join(differ)} differ); resume it without "
            f"CONFIG and --set (`{resume_command(run_dir)}` takes the config from its manifest)"
        )


FOLDER = "sentinel"


def sentinel(
    inv: Invocation | None,
    run_dir: Path,
    record: SpeedRecord,
    precision: float,
    run_id: str = "",
    off: bool = False,
) -> Sentinel:
    """The run's sentinel: ``inv`` its reference (None: a plan without a baseline, no readings)."""
    executor = ProcessExecutor()

    def measure(index: int) -> tuple[float | None, str | None, float | None]:
        assert inv is not None
        folder = run_dir / FOLDER
        (folder / "raw").mkdir(parents=True, exist_ok=True)
        outcome = executor.run([(index, inv)], folder)[0]
        sample = judge(inv, outcome, run_id, now_iso()).sample
        tps = sample.tps if sample.status == "ok" else None
        return tps, None if tps is not None else (sample.invalid_reason or sample.status), sample.span_s

    def pairs(speed: SpeedRecord, phase: str) -> None:
        if has_samples(run_dir):
            samples = load_samples(run_dir)
            speed.pair_s = pair_span_s(samples)
            if phase == "after":
                speed.windows = baseline_windows(samples)

    reference = f"{inv.model} alone, {inv.generation.n_predict} tokens of {inv.prompt_id}" if inv else None
    return Sentinel(measure if inv is not None else None, record, precision, reference, off, pairs)


def pair_span_s(samples: Sequence[Sample]) -> float | None:
    """How long one pair of the run spans, the median over its pairs (first start to last end): the
    builds' samples of one cell, prompt and repetition, and each speculative sample with its
    baseline (``machine.speed.within_pair``). None: no pair measured yet."""
    groups: dict[tuple, list[tuple[float, float]]] = {}
    baselines: dict[tuple, tuple[float, float]] = {}
    speculative: list[tuple[tuple, tuple[float, float]]] = []
    for s in samples:
        start = epoch_seconds(s.started_at)
        if start is None:
            continue
        span = (start, start + s.wall_s)
        groups.setdefault(pair_key(s), []).append(span)
        key = (baseline_of(s), s.prompt_id, s.repetition)
        if s.role == "baseline":
            baselines[key] = span
        elif s.role == "speculative":
            speculative.append((key, span))
    pairs = [g for g in groups.values() if len(g) > 1]
    pairs += [[baselines[key], span] for key, span in speculative if key in baselines]
    spans = [max(e for _, e in g) - min(b for b, _ in g) for g in pairs]
    return round(statistics.median(spans), 3) if spans else None


def check_same_builds(then: dict[str, BuildInfo], now: dict[str | None, BuildInfo], run_dir: Path) -> None:
    """``--resume`` of a multi-build run must measure the builds it began with: a ref that moved
    (a branch with new commits) or a work tree edited since would mix two commits under one label."""
    for label, before in then.items():
        after = now.get(label)
        if after is not None and after.key != before.key:
            was, is_ = (before.commit or before.key)[:12], (after.commit or after.key)[:12]
            raise RunError(
                f"{run_dir}: build {label!r} was {was} and is {is_} now (its ref moved or its tree changed); "
                "its samples would mix two builds: start a new run (or check out the commit it had)"
            )

"""The whole of ``specbench run`` as library calls: config -> build -> models -> pair checks -> plan
-> execute -> summary. The CLI only renders what these return.

Everything that can refuse a run (config, build, models, incompatible pairs, an unwritable or
locked results folder) is checked before the first llama.cpp invocation, so a bad sweep fails in
seconds, not an hour in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specbench.base.errors import BuildError, ModelError, RunError
from specbench.builder.buildinfo import BinaryInfo, BuildInfo
from specbench.execute.runner import ProgressFn, RunResult, execute, prepare_run_dir
from specbench.models.paircheck import PairCheck
from specbench.models.spec import ResolvedModel
from specbench.results.folder import has_manifest, has_samples, make_run_id, manifest_path
from specbench.results.manifest import Manifest, machine_differences
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples

if TYPE_CHECKING:
    from specbench.builder.buildplan import BuildPlan
    from specbench.execute.adaptive import AdaptivePlan
    from specbench.plan.config import Config
    from specbench.plan.invocation import Plan
    from specbench.plan.prompts import RenderedPrompt
    from specbench.plan.shards import Shard, Sharding
    from specbench.results.records import Sample


class PlannedBuild(BuildInfo):
    """A build that does not exist yet (dry-run): binaries are where the build would put them and
    flag spellings are borrowed from a cached build of llama.cpp (the same tree when there is one)."""

    def binary(self, role: str) -> BinaryInfo:
        info = self.binaries.get(role)
        if info is None:
            raise BuildError(
                f"the cached builds have no {role} binary to learn its flags from; run `specbench build`"
            )
        return info


@dataclass
class PlannedModel:
    """A model a dry run did not fetch: where it comes from, and that it is not in the cache."""

    name: str
    source: str
    path: str  # a placeholder shown in command lines


@dataclass
class Prepared:
    """Everything decided before anything runs."""

    config: Config
    build: BuildInfo
    build_preview: BuildPlan | None
    models: dict[str, ResolvedModel | PlannedModel]  # PlannedModel only in a dry run
    pair_checks: dict[str, PairCheck]
    prompts: list[RenderedPrompt]
    plan: Plan
    builds: dict[str | None, BuildInfo] = field(default_factory=dict)  # by label, in the config's order
    build_previews: dict[str | None, BuildPlan] = field(default_factory=dict)  # dry run: each build's plan
    sharding: Sharding | None = None  # `run --shard i/N`: the part of the plan this run measures


@dataclass
class RunSummary:
    """The end of a run: where it is and how it ended (its table comes from specbench.analysis)."""

    run_dir: Path
    run_id: str
    n_samples: int
    n_new: int
    n_failed: int
    n_invalid: int
    busy: list[str] = field(default_factory=list)  # why the noise check found the machine busy
    noise_notes: list[str] = field(default_factory=list)  # e.g. an unsteady CPU frequency governor
    rounds: int = 0  # extra rounds of `repetitions: auto` (of `ab`: of the paired gate)
    budget_spent: bool = False  # `ab --budget`: a round was wanted when the budget was spent
    most_repetitions: int = 0  # the most a cell could get in rounds (0: no rounds)
    speed_moved: list[str] = field(default_factory=list)  # the speed sentinel's warnings
    sentinel_cost_s: float = 0.0  # what its readings took (all of this run's, resumed ones too)


def _planned_build(preview: BuildPlan) -> BuildInfo:
    """A BuildInfo for a build that is not there: paths where it will be, flags from a cached one."""
    from specbench.base import paths

    infos = BuildInfo.load_all(paths.builds_dir())
    same_tree = [i for i in infos if i.source == str(preview.tree.path)]
    donor = (same_tree or infos or [None])[0]
    if donor is None:
        raise BuildError(
            "a dry run needs one build of llama.cpp to learn its flag spellings; run `specbench build` first"
        )
    bin_dir = preview.build_dir / "bin"
    binaries = {
        role: b.model_copy(update={"path": str(bin_dir / Path(b.path).name)})
        for role, b in donor.binaries.items()
    }
    commit = donor.commit if donor.source == str(preview.tree.path) else None
    return PlannedBuild(
        key=preview.key, source=str(preview.tree.path), commit=commit, backend=preview.backend,
        cmake_args=preview.args, bin_dir=str(bin_dir), binaries=binaries,
    )  # fmt: skip


def check_pairs(config: Config, models: dict[str, Any]) -> dict[str, PairCheck]:
    """The pre-flight pair check of every draft pair; a refused pair stops the run before it starts."""
    from specbench.models.meta import read_spec_facts
    from specbench.models.paircheck import check_pair
    from specbench.plan.methods import DRAFT_METHOD, parts

    checks: dict[str, PairCheck] = {}
    for name, pair in config.pairs.items():
        if pair.draft is None or (pair.method is not None and DRAFT_METHOD not in parts(pair.method)):
            continue  # only draft-simple compares the vocabularies (common/speculative.cpp)
        target, draft = models[pair.target], models[pair.draft]
        if not Path(getattr(target, "path", "")).is_file() or not Path(getattr(draft, "path", "")).is_file():
            continue  # dry run of models not fetched yet: nothing to check
        if read_spec_facts(Path(draft.path)).architecture in ("eagle3", "dflash"):
            continue  # a head, not a model: plan.preflight says which method it fits
        checks[name] = check_pair(Path(target.path), Path(draft.path))
        if not checks[name].ok:
            raise ModelError(f"pair {name!r} ({pair.target} + {pair.draft}): {checks[name].message}")
    return checks


def _dry_models(config: Config, build: BuildInfo) -> dict[str, ResolvedModel | PlannedModel]:
    """Resolve what is already in the cache (Hub files included, found without asking the Hub);
    describe the rest without downloading or deriving."""
    from specbench.models import resolve_models

    found = resolve_models(config.models, config.base_dir, build, fetch=False)
    return {
        name: found[name] if name in found else _planned(name, spec) for name, spec in config.models.items()
    }


def _planned(name: str, spec: Any) -> PlannedModel:
    return PlannedModel(name, spec.describe(), f"<{name}: not cached>")


def load(config_path: Path, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    from specbench.plan.config import load_config

    return load_config(config_path, list(overrides))


def load_resumed(run_dir: Path, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """The config a run folder was run with, for ``--resume DIR`` without CONFIG: its manifest
    keeps the resolved config (``--set`` overrides applied), so the run continues exactly as begun."""
    import copy

    from specbench.plan.config import config_from_mapping
    from specbench.plan.configtext import apply_override

    manifest = load_manifest(run_dir)
    data = copy.deepcopy(manifest.config)
    overridden = {apply_override(data, o) for o in overrides}
    config_path = Path(manifest.config_path) if manifest.config_path else None
    base_dir = config_path.parent if config_path else run_dir
    cfg = config_from_mapping(data, base_dir, f"{manifest_path(run_dir)}: config", overridden)
    cfg.path = config_path
    return cfg


def prepare(
    config: Config,
    dry_run: bool = False,
    build_progress: Any = None,
    model_progress: Any = None,
    shard: Shard | None = None,
) -> Prepared:
    """Build (or, dry, preview the build), resolve models, check pairs, render prompts, plan
    (``shard``: only that shard's part of the plan, ``specbench.plan.shards``)."""
    from specbench.execute.builds import ensure_builds, preview_builds
    from specbench.models import resolve_models
    from specbench.plan.prompts import render, render_all
    from specbench.plan.sweep import make_plan

    preview, previews = None, {}
    if dry_run:
        both = preview_builds(config, _planned_build)
        builds = _as_configured(config, {label: info for label, (_, info) in both.items()})
        previews = {label: pv for label, (pv, _) in both.items()}
        preview = next(iter(previews.values()))
        build = next(iter(builds.values()))
        models = _dry_models(config, build)
    else:
        builds = _as_configured(config, ensure_builds(config, build_progress))
        build = next(iter(builds.values()))  # the first build derives models (llama-quantize)
        models = resolve_models(config.models, config.base_dir, build, progress=model_progress)
    checks = check_pairs(config, models)
    targets = {name: Path(models[name].path) for name in config.targets()}
    here = {name: path for name, path in targets.items() if path.is_file()}
    prompts = render_all(config.prompt_list(), here) if here else []
    for name in sorted(targets.keys() - here.keys()):  # dry run: no GGUF, so no chat template to render with
        prompts += [render(p, name, None) for p in config.prompt_list()]
    plan = make_plan(config, builds, models, prompts)
    sharding = None
    if shard is not None:
        from specbench.plan.shards import cut

        plan, sharding = cut(plan, config, shard)
    if config.auto_repetitions:
        plan.notes.append(
            f"repetitions: auto: this is round 1 ({config.min_repetitions} repetitions); cells whose mean "
            f"t/s misses precision {config.precision:g} get one more repetition a round, up to "
            f"{config.max_repetitions}"
        )
    plan.notes += ignored_settings(config)
    plan.notes += env_notes()
    for name in sorted(targets.keys() - here.keys()):
        plan.notes = [n for n in plan.notes if not n.startswith(f"model {name} has no chat template")]
        plan.notes.append(f"model {name} is not cached: its prompts are shown without its chat template")
    return Prepared(
        config, build, preview, models, checks, prompts, plan, builds, previews, sharding=sharding
    )


def _as_configured(config: Config, builds: dict[str | None, BuildInfo]) -> dict[str | None, BuildInfo]:
    """``workarounds: false`` (``--no-workarounds``): builds run as built; the manifest says so."""
    if config.workarounds:
        return builds
    return {label: b.model_copy(update={"workarounds_off": True}) for label, b in builds.items()}


def env_notes() -> list[str]:
    """Variables that change llama.cpp (it reads every option from LLAMA_ARG_*) reach every binary
    started: named, since they are recorded in the manifest and make runs differ."""
    from specbench.base.childenv import provenance_env

    found = provenance_env()
    if not found:
        return []
    listed = ", ".join(f"{k}={v}" for k, v in found.items())
    return [f"environment: {listed} reach every llama.cpp binary (recorded in the manifest's env)"]


def ignored_settings(config: Config) -> list[str]:
    """Keys of ``repetitions: auto`` set away from their defaults while ``repetitions`` is a fixed
    count: they change nothing, and a user who set them expects they did."""
    if config.auto_repetitions:
        return []
    fields = type(config).model_fields
    changed = [k for k in ("min_repetitions", "max_repetitions") if getattr(config, k) != fields[k].default]
    precision = config.precision != fields["precision"].default
    if not changed and not precision:
        return []
    what = changed + (["precision"] if precision else [])
    why = " (precision still marks cells `imprecise` in the report)" if precision else ""
    return [
        f"{', '.join(what)} {'is' if len(what) == 1 else 'are'} for `repetitions: auto`; with repetitions "
        f"{config.repetitions} no cell is repeated to meet them{why}: --set repetitions=auto uses them"
    ]


def left_to_run(prepared: Prepared, run_dir: Path, force: bool = False) -> None:
    """A dry run of ``--resume``: the refusals the real resume makes (a run still going, another
    config, another machine), then the plan keeps only what it would still measure (the warmups
    too, when anything is left, and with ``repetitions: auto`` the rounds already begun), with a
    note saying how much is recorded already and what reading the samples left out."""
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
    measured = [i for i in plan.measured if i.sample_key() not in done]
    n_done = len(plan.measured) - len(measured)
    plan.invocations = [
        i for i in plan.invocations if (i.warmup and measured) or not i.warmup and i.sample_key() not in done
    ]
    plan.notes += warnings  # each names the samples file
    if not measured:
        plan.notes.append(f"{run_dir}: every planned sample is recorded already; nothing left to run")
    else:
        plan.notes.append(f"{run_dir}: {n_done} of {n_done + len(measured)} planned samples are recorded "
                          f"already; only the {len(measured)} left are listed")  # fmt: skip
    if prepared.config.auto_repetitions:
        plan.notes.append(
            "repetitions: auto: whether more rounds follow is decided from the samples as the run goes"
        )


def new_run_dir(config: Config, out: Path | None) -> Path:
    """``results/<YYYYmmdd-HHMMSS>-<name>/`` unless ``--out`` says otherwise."""
    from specbench.base.paths import check_path, results_dir

    if out is not None:
        return Path(out)
    run_dir = results_dir() / make_run_id(config.name)
    check_path(run_dir, "run folder (named after the config's `name:`; pass --out DIR or shorten the name)")
    return run_dir


def make_manifest(prepared: Prepared, run_dir: Path, command_line: list[str]) -> Manifest:
    from specbench.builder.envinfo import collect

    cfg = prepared.config
    return Manifest(
        run_id=run_dir.name, name=cfg.name, config_path=str(cfg.path) if cfg.path else None,
        config=cfg.model_dump(mode="json"), build=prepared.build, env=collect(), models=prepared.models,
        builds={label: b for label, b in prepared.builds.items() if label is not None},
        pair_checks=prepared.pair_checks, command_line=command_line, runner=cfg.runner,
        **_shard_facts(prepared),
    )  # fmt: skip


def _shard_facts(prepared: Prepared) -> dict[str, Any]:
    s = prepared.sharding
    if s is None:
        return {}
    return {"shard": s.shard.label, "shard_cells": s.cells, "plan_cells": s.plan_cells, "plan_id": s.plan_id}


def resumed_shard(run_dir: Path) -> Shard | None:
    """The shard a run folder measures (``--resume`` goes on with the same part of the plan)."""
    from specbench.plan.shards import Shard, parse_shard

    manifest = load_manifest(run_dir) if has_manifest(run_dir) else None
    if manifest is None or not manifest.shard:
        return None
    shard = parse_shard(manifest.shard)
    return Shard(shard.index, shard.count, tuple(manifest.shard_cells) if manifest.shard_cells else None)


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

    ``strict``: a busy machine (the noise check) is an error, not a warning. With ``repetitions:
    auto`` the plan is the first round and more rounds follow (``specbench.execute.adaptive``);
    ``undecided`` replaces their precision rule (``specbench ab``: the cells its paired gate leaves
    undecided get the next round), and with it the rounds follow whatever ``repetitions`` says (a
    fixed count is the first round), up to ``max_repetitions`` or ``budget_s`` seconds of this
    call (no round starts after it). ``force``: resume a run made on another machine.
    """
    from specbench.execute.builds import check_same_builds
    from specbench.execute.sentinel import Sentinel
    from specbench.execute.watch import NoiseWatch

    prepare_run_dir(run_dir, resume)
    if resume and has_manifest(run_dir):
        manifest = load_manifest(run_dir)
        _check_same_config(manifest, prepared.config, run_dir)
        _check_same_machine(manifest, run_dir, force)
        check_same_builds(manifest.builds, prepared.builds, run_dir)
        manifest.build, manifest.models = prepared.build, prepared.models
        manifest.builds = {label: b for label, b in prepared.builds.items() if label is not None}
    else:
        manifest = make_manifest(prepared, run_dir, command_line or [])
    plan, adaptive = prepared.plan, None
    speed = manifest.noise.speed
    reference = None if _nothing_left(plan, run_dir, resume, prepared.config) else plan.sentinel
    sentinel = Sentinel(reference, run_dir, speed, prepared.config.precision, manifest.run_id)
    watch = NoiseWatch(manifest, strict, sentinel=sentinel)
    watch.check("before")  # --strict refuses before anything is written
    if prepared.config.auto_repetitions or undecided is not None:
        adaptive = _adaptive(prepared)
        adaptive.undecided = undecided
        if budget_s is not None:
            adaptive.deadline = time.monotonic() + budget_s
        if resume and has_samples(run_dir):
            plan = _with_begun_rounds(plan, adaptive, load_samples(run_dir))
    started = time.monotonic()
    result = execute(
        plan, run_dir, manifest, progress=progress, resume=resume,
        extend=adaptive.next_round if adaptive else None, observe=watch,
    )  # fmt: skip
    run_s = time.monotonic() - started
    summary = summarize(result)
    summary.busy, summary.noise_notes = list(manifest.noise.busy), list(manifest.noise.notes)
    summary.speed_moved, summary.sentinel_cost_s = list(speed.warnings), speed.cost_s()
    line = speed.describe(run_s if not resume else None)  # a resumed run's readings span several runs
    summary.noise_notes += [line] if line else []
    summary.rounds = adaptive.rounds if adaptive else 0
    if adaptive:
        summary.budget_spent, summary.most_repetitions = adaptive.budget_spent, adaptive.maximum
    return summary


def _nothing_left(plan: Plan, run_dir: Path, resume: bool, config: Config) -> bool:
    """A resume with every planned sample recorded (and no later round to plan): nothing to read
    the machine's speed for."""
    if not resume or config.auto_repetitions or not has_samples(run_dir):
        return False
    done = {s.sample_key() for s in load_samples(run_dir)}
    return all(i.warmup or i.sample_key() in done for i in plan.invocations)


def _with_begun_rounds(plan: Plan, adaptive: AdaptivePlan, samples: list[Sample]) -> Plan:
    """``plan`` and the repetitions of ``repetitions: auto`` rounds that an interruption cut short."""
    keys = {i.sample_key() for i in plan.invocations}
    more = [i for i in adaptive.resume_plan(samples) if i.sample_key() not in keys]
    return plan.only([*plan.invocations, *more])


def _adaptive(prepared: Prepared):
    """The plan of every repetition up to ``Config.most_repetitions``, to cut rounds from."""
    from specbench.execute.adaptive import AdaptivePlan
    from specbench.plan.sweep import make_plan

    cfg = prepared.config
    most = cfg.most_repetitions
    full = make_plan(cfg, prepared.builds, prepared.models, prepared.prompts, repetitions=most)
    if prepared.sharding is not None:  # the later rounds of a shard repeat its own cells only
        from specbench.plan.shards import restrict

        full = restrict(full, prepared.sharding.shard, prepared.sharding.cells)
    return AdaptivePlan(full.measured, cfg.precision, most)


def check_resume_machine(run_dir: Path, force: bool) -> None:
    """``--resume`` on another machine is refused before anything is built or fetched (unless
    ``force``); run_benchmark checks again and records a forced resume."""
    if not force and has_manifest(run_dir):
        _check_same_machine(load_manifest(run_dir), run_dir, force)


def check_resume_config(run_dir: Path, config: Config) -> None:
    """``--resume`` (or ``ab --out`` an existing folder) with another config is refused before
    anything is built; run_benchmark checks again."""
    if has_manifest(run_dir):
        _check_same_config(load_manifest(run_dir), config, run_dir)


def _check_same_machine(manifest: Manifest, run_dir: Path, force: bool) -> None:
    """Resuming on another machine would mix two machines' numbers in one run: refused, or with
    ``force`` recorded in the manifest (the report then warns)."""
    from specbench.builder.envinfo import collect

    differ = machine_differences(manifest.env, collect())
    if not differ:
        return
    if not force:
        raise RunError(
            f"{run_dir} was made on another machine ({'; '.join(differ)}): resuming here would mix "
            "two machines' numbers in one run; resume it there, start a new run, or continue anyway "
            f"with `specbench run --resume {run_dir} --force`"
        )
    manifest.other_machines.append("; ".join(differ))


def _check_same_config(manifest: Manifest, config: Config, run_dir: Path) -> None:
    """Resuming with another config would mix two experiments in one run folder."""
    from pydantic import ValidationError

    from specbench.plan.config import Config

    now = config.model_dump(mode="json")
    try:  # keys added since the run was made (their defaults) must not count as a difference
        then = Config.model_validate(manifest.config).model_dump(mode="json")
    except ValidationError:
        then = manifest.config
    differ = sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k))
    if differ:
        raise RunError(
            f"{run_dir} was run with a different config ({', '.join(differ)} differ); resume it without "
            f"CONFIG and --set (`specbench run --resume {run_dir}` takes the config from its manifest)"
        )


def summarize(result: RunResult) -> RunSummary:
    samples = result.samples
    return RunSummary(
        run_dir=result.run_dir, run_id=result.run_id, n_samples=len(samples),
        n_new=result.n_new, n_failed=sum(s.status in ("failed", "timeout") for s in samples),
        n_invalid=sum(s.status == "invalid" for s in samples),
    )  # fmt: skip

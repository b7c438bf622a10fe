"""The whole of ``specbench run`` as library calls: config -> build -> models -> pair checks -> plan
-> execute -> summary. The CLI only renders what these return.

Everything that can refuse a run (config, build, models, incompatible pairs, an unwritable or
locked results folder) is checked before the first llama.cpp invocation, so a bad sweep fails in
seconds, not an hour in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specbench.build.buildinfo import BinaryInfo, BuildInfo
from specbench.errors import BuildError, ModelError, RunError
from specbench.execute.executor import Executor, ProcessExecutor
from specbench.execute.runner import ProgressFn, RunResult, execute, prepare_run_dir
from specbench.models.paircheck import PairCheck
from specbench.models.spec import ResolvedModel
from specbench.results.folder import has_manifest, load_manifest, make_run_id
from specbench.results.manifest import Manifest

if TYPE_CHECKING:
    from specbench.build.builder import BuildPlan
    from specbench.plan.config import Config
    from specbench.plan.prompts import RenderedPrompt
    from specbench.plan.sweep import Plan


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
    cached: bool = False


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
    dry_run: bool = False

    @property
    def invocations(self) -> list:
        return list(self.plan.invocations)


@dataclass
class RunSummary:
    """The end of a run: where it is and how it ended (its table comes from specbench.analysis)."""

    run_dir: Path
    run_id: str
    status: str
    n_samples: int
    n_new: int
    n_failed: int
    n_invalid: int


def _planned_build(preview: BuildPlan) -> BuildInfo:
    """A BuildInfo for a build that is not there: paths where it will be, flags from a cached one."""
    from specbench import paths

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
    from specbench.models.paircheck import check_pair

    checks: dict[str, PairCheck] = {}
    for name, pair in config.pairs.items():
        if pair.draft is None:
            continue
        target, draft = models[pair.target], models[pair.draft]
        if not Path(getattr(target, "path", "")).is_file() or not Path(getattr(draft, "path", "")).is_file():
            continue  # dry run of models not fetched yet: nothing to check
        checks[name] = check_pair(Path(target.path), Path(draft.path))
        if not checks[name].ok:
            raise ModelError(f"pair {name!r} ({pair.target} + {pair.draft}): {checks[name].message}")
    return checks


def _dry_models(config: Config, build: BuildInfo) -> dict[str, ResolvedModel | PlannedModel]:
    """Resolve what is already here; describe the rest without downloading or deriving."""
    import inspect

    from specbench.models import resolve_models

    if "fetch" in inspect.signature(resolve_models).parameters:
        found = resolve_models(config.models, config.base_dir, build, fetch=False)
        return {
            name: m if isinstance(m, ResolvedModel) else _planned(name, spec, getattr(m, "path", None))
            for name, spec in config.models.items()
            for m in [found.get(name)]
        }
    from specbench.models.derive import derived_path
    from specbench.models.pypi import cached_file
    from specbench.models.resolve import derive_order

    models: dict[str, Any] = {}
    for name in derive_order(config.models):  # a derived model's source comes first
        spec = config.models[name]
        src = models.get(spec.derive.from_) if spec.derive else None
        cached = (
            spec.path is not None
            or (spec.pypi is not None and cached_file(spec.pypi) is not None)
            or (
                isinstance(src, ResolvedModel)
                and derived_path(src.path, src.sha256, spec.derive.quant).is_file()
            )
        )  # fmt: skip
        if cached:  # resolving finds it in the cache: nothing is downloaded or quantized
            models.update(resolve_models(config.models, config.base_dir, build, only=[name]))
        else:
            models[name] = _planned(name, spec, None)
    return {name: models[name] for name in config.models}


def _planned(name: str, spec: Any, path: Any) -> PlannedModel:
    return PlannedModel(name, spec.describe(), str(path) if path else f"<{name}: not cached>")


def load(config_path: Path, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    from specbench.plan.config import load_config

    return load_config(config_path, list(overrides))


def prepare(
    config: Config,
    dry_run: bool = False,
    build_progress: Any = None,
    model_progress: Any = None,
) -> Prepared:
    """Build (or, dry, preview the build), resolve models, check pairs, render prompts, plan."""
    from specbench.models import resolve_models
    from specbench.plan.prompts import render, render_all
    from specbench.plan.sweep import make_plan

    preview = None
    if dry_run:
        from specbench.build.builder import BUILD_JSON, plan_build

        lc = config.llama_cpp
        preview = plan_build(lc.backend, lc.source, lc.cmake_args)
        build = BuildInfo.load(preview.build_dir / BUILD_JSON) if preview.cached else _planned_build(preview)
        models = _dry_models(config, build)
    else:
        from specbench.build.builder import ensure_build

        lc = config.llama_cpp
        build = ensure_build(lc.backend, lc.source, lc.jobs, lc.cmake_args, progress=build_progress)
        models = resolve_models(config.models, config.base_dir, build, progress=model_progress)
    checks = check_pairs(config, models)
    targets = {name: Path(models[name].path) for name in config.targets()}
    here = {name: path for name, path in targets.items() if path.is_file()}
    prompts = render_all(config.prompt_list(), here) if here else []
    for name in sorted(targets.keys() - here.keys()):  # dry run: no GGUF, so no chat template to render with
        prompts += [render(p, name, None) for p in config.prompt_list()]
    plan = make_plan(config, build, models, prompts)
    for name in sorted(targets.keys() - here.keys()):
        plan.notes = [n for n in plan.notes if not n.startswith(f"model {name} has no chat template")]
        plan.notes.append(f"model {name} is not cached: its prompts are shown without its chat template")
    return Prepared(config, build, preview, models, checks, prompts, plan, dry_run)


def new_run_dir(config: Config, out: Path | None) -> Path:
    """``results/<YYYYmmdd-HHMMSS>-<name>/`` unless ``--out`` says otherwise."""
    from specbench.paths import results_dir

    return Path(out) if out is not None else results_dir() / make_run_id(config.name)


def make_manifest(prepared: Prepared, run_dir: Path, command_line: list[str]) -> Manifest:
    from specbench.build.envinfo import collect

    cfg = prepared.config
    return Manifest(
        run_id=run_dir.name, name=cfg.name, config_path=str(cfg.path) if cfg.path else None,
        config=cfg.model_dump(mode="json"), build=prepared.build, env=collect(), models=prepared.models,
        pair_checks=prepared.pair_checks, command_line=command_line, runner=cfg.runner,
    )  # fmt: skip


def run_benchmark(
    prepared: Prepared,
    run_dir: Path,
    resume: bool = False,
    progress: ProgressFn | None = None,
    command_line: list[str] | None = None,
) -> RunSummary:
    """Execute a prepared plan into ``run_dir`` (or continue it) and summarise it."""
    prepare_run_dir(run_dir, resume)
    if resume and has_manifest(run_dir):
        manifest = load_manifest(run_dir)
        _check_same_config(manifest, prepared.config, run_dir)
        manifest.build, manifest.models = prepared.build, prepared.models
    else:
        manifest = make_manifest(prepared, run_dir, command_line or [])
    executor = make_executor(prepared)
    result = execute(prepared.invocations, run_dir, manifest, progress, resume, executor)
    return summarize(result)


def make_executor(prepared: Prepared) -> Executor:
    """A llama.cpp process per invocation, or a llama-server per setting (``runner: server``)."""
    if prepared.config.runner == "server":
        from specbench.execute.server_executor import ServerExecutor

        return ServerExecutor(warmup=prepared.config.warmup)
    return ProcessExecutor()


def _check_same_config(manifest: Manifest, config: Config, run_dir: Path) -> None:
    """Resuming with another config would mix two experiments in one run folder."""
    now = config.model_dump(mode="json")
    differ = sorted(k for k in set(now) | set(manifest.config) if now.get(k) != manifest.config.get(k))
    if differ:
        raise RunError(
            f"{run_dir} was run with a different config ({', '.join(differ)} differ); resume it with the "
            f"same CONFIG and --set options ({manifest.config_path or 'see its manifest'})"
        )


def summarize(result: RunResult) -> RunSummary:
    samples = result.samples
    return RunSummary(
        run_dir=result.run_dir, run_id=result.run_id, status=result.status, n_samples=len(samples),
        n_new=result.n_new, n_failed=sum(s.status in ("failed", "timeout") for s in samples),
        n_invalid=sum(s.status == "invalid" for s in samples),
    )  # fmt: skip

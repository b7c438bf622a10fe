"""The llama.cpp builds of a run: one, or a list of labelled builds measured side by side.

Every build is made (or found cached) before anything is measured, so a build that fails to compile
stops the run with the compiler's first error line before the others are measured alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specbench.base.errors import BuildError, RunError
from specbench.builder.builder import ensure_build
from specbench.builder.buildinfo import BuildInfo
from specbench.builder.buildplan import BUILD_JSON, BuildPlan, plan_build
from specbench.builder.cmake import BuildProgress, CompileError

if TYPE_CHECKING:
    from specbench.plan.config import Config
    from specbench.plan.sections import LlamaCppConfig

Label = str | None  # a build's label: the samples' `build` axis (None: a run's one unlabelled build)


def _named(build: LlamaCppConfig, total: int, exc: BuildError) -> BuildError:
    """The same error, saying which build of several it was (a CompileError keeps its lines)."""
    if total == 1:
        return exc
    message = f"build {build.label!r} ({build.describe().split(': ', 1)[-1]}): {exc}"
    if isinstance(exc, CompileError):
        return CompileError(message, exc.details, exc.log)
    return BuildError(message, exc.exit_code)


def _tell(progress: Callable[[BuildProgress], None] | None, label: Label, total: int) -> Any:
    """Progress of one build, its messages prefixed with the label when there are several."""
    if progress is None or total == 1:
        return progress

    def say(p: BuildProgress) -> None:
        progress(BuildProgress(p.phase, f"[{label}] {p.message}", p.done, p.total))

    return say


def ensure_builds(
    config: Config, progress: Callable[[BuildProgress], None] | None = None
) -> dict[Label, BuildInfo]:
    """Every build of the config, in its order, by label: built now or found in the cache."""
    builds = config.builds
    out: dict[Label, BuildInfo] = {}
    for build in builds:
        try:
            out[build.label] = ensure_build(
                build.backend, build.source, build.jobs, build.cmake_args,
                progress=_tell(progress, build.label, len(builds)), ref=build.ref,
            )  # fmt: skip
        except BuildError as exc:
            raise _named(build, len(builds), exc) from exc
    return out


def preview_builds(
    config: Config, planned: Callable[[BuildPlan], BuildInfo]
) -> dict[Label, tuple[BuildPlan, BuildInfo]]:
    """A dry run's builds: which each would be (key, commit), the cached build.json when there is one,
    else ``planned(preview)`` (binaries where the build would put them)."""
    out: dict[Label, tuple[BuildPlan, BuildInfo]] = {}
    builds = config.builds
    for build in builds:
        try:
            preview = plan_build(build.backend, build.source, build.cmake_args, ref=build.ref)
        except BuildError as exc:
            raise _named(build, len(builds), exc) from exc
        info = BuildInfo.load(preview.build_dir / BUILD_JSON) if preview.cached else planned(preview)
        out[build.label] = (preview, info)
    return out


def check_same_builds(then: dict[str, BuildInfo], now: dict[Label, BuildInfo], run_dir: Path) -> None:
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

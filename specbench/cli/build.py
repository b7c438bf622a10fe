"""`specbench build`: get and compile llama.cpp for this machine (cached; a second call is a no-op)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from specbench.cli.common import err_console, say


def build(
    backend: Annotated[
        str,
        typer.Option(
            metavar="BACKEND",
            help="auto | cpu | cuda | metal (auto: CUDA with nvcc and an "
            "NVIDIA GPU, Metal on Apple silicon, else CPU).",
        ),
    ] = "auto",
    source: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Build this llama.cpp checkout instead of the pinned one."),
    ] = None,
    ref: Annotated[
        str | None,
        typer.Option(
            metavar="REF",
            help="Build this git ref (branch, tag, commit) of --source, exported clean: the work tree "
            "is not touched.",
        ),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", metavar="N", help="Parallel compile jobs (default: all CPUs).", min=1),
    ] = None,
    cmake_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--cmake-arg",
            metavar="-DNAME=VALUE",
            help="Extra -DNAME=VALUE for cmake (repeatable; overrides specbench's defaults).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild from scratch even when cached.")] = False,
) -> None:
    """Get llama.cpp (pinned commit, or --source) and build the binaries specbench runs."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from specbench.builder.builder import ensure_build
    from specbench.builder.buildplan import BUILD_JSON, build_dir_for
    from specbench.builder.cmake import CompileError

    start = time.monotonic()
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    task = bar.add_task("preparing", total=None)
    phases: set[str] = set()

    def progress(p) -> None:
        if not phases:
            bar.start()
        phases.add(p.phase)
        if p.done is None:
            err_console.print(f"[dim]{p.phase}:[/dim] {p.message}", highlight=False, soft_wrap=True)
            bar.update(task, description=p.phase)
        else:
            bar.update(task, description=p.phase, completed=p.done, total=p.total)

    try:
        info = ensure_build(
            backend=backend,
            source=source,
            jobs=jobs,
            cmake_args=cmake_arg or (),
            force=force,
            progress=progress,
            ref=ref,
        )
    except CompileError as exc:
        bar.stop()
        for line in exc.details:
            say(line, err=True)
        raise
    finally:
        bar.stop()
    took = time.monotonic() - start
    verb = "built" if "build" in phases else "cached"
    at = f" {info.source}@{info.ref}" if info.ref else ""
    say(f"{verb}: llama.cpp{at} {info.commit or 'unknown commit'} ({info.backend}) in {took:.1f} s")
    if verb == "built" and info.build_steps is not None:
        reuse = f" (ccache {info.ccache})" if info.ccache else ""
        say(f"compile steps: {info.build_steps} in {info.work_area}{reuse}")
    say(f"binaries: {info.bin_dir}")
    for role, b in sorted(info.binaries.items()):
        say(f"  {role:<19} {b.name}")
    say(f"build.json: {build_dir_for(info.key) / BUILD_JSON}")
    for line in selftest_lines(info.selftest):
        say(line)


def selftest_lines(st) -> list[str]:
    """The self-test record as `build` and `env` print it: per type, and the workaround with its reason."""
    if st is None:
        return ["self-test: none recorded"]
    lines = [f"self-test ({st.machine}, {st.checked_at}): {st.summary()}"]
    for name, c in [*((c.wtype, c) for c in st.checks), *(st.speculative or {}).items()]:
        if c.outcome != "ok" and c.reason:
            lines.append(f"  {name}: {c.reason}")
    if st.workaround is not None:
        lines.append(
            f"workaround: every run of this build gets {st.workaround.flag} ({st.workaround.reason}); "
            "`specbench run --no-workarounds` runs it as built"
        )
    return lines


def register(app: typer.Typer) -> None:
    app.command("build")(build)

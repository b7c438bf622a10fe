"""`specbench build`: get and compile llama.cpp for this machine (cached; a second call is a no-op);
`specbench env`: the machine results are measured on, and the cached builds."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from specbench.cli.common import app, err_console, say
from specbench.cli.output import Format, RecordFormat, chosen, print_json


@app.command("build")
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
    columns = (BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    bar = Progress(TextColumn("{task.description}"), *columns, console=err_console, transient=True)
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
        info = ensure_build(backend, source, jobs, cmake_arg or (), force=force, progress=progress, ref=ref)
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
    """The self-test record: per type, and the workaround with its reason."""
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


@app.command("env")
def env(
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
    fmt: RecordFormat = Format.table,
) -> None:
    """Show OS, CPU, RAM, GPUs, versions, the backend `build --backend auto` picks, and cached builds."""
    from specbench.builder.buildinfo import env_report

    info = env_report()
    if chosen(fmt, as_json) == Format.json:
        print_json(info)
        return
    rows = [
        ("host", info.hostname or "unknown"),
        ("os", f"{info.os} ({info.arch})"),
        ("cpu", f"{info.cpu_model}, {info.cpu_cores} cores"),
        ("ram", f"{info.ram_gb} GB" if info.ram_gb is not None else "unknown"),
        ("python", info.python),
        ("specbench", info.specbench_version),
        ("backend (auto)", info.backend),
    ]
    for k, v in rows:
        say(f"{k:<15} {v}")
    if info.variables:
        listed = ", ".join(f"{k}={v}" for k, v in info.variables.items())
        say(f"{'llama env':<15} {listed} (every llama.cpp binary sees them)")
    if not info.gpus:
        say(f"{'gpus':<15} none found")
    for gpu in info.gpus:
        mem = f", {gpu.memory_mb} MiB" if gpu.memory_mb else ""
        cap = f", compute {gpu.compute_cap}" if gpu.compute_cap else ""
        say(f"{'gpu':<15} {gpu.name} (driver {gpu.driver or '?'}{mem}{cap})")
    if not info.builds:
        say("no cached llama.cpp builds; run `specbench build`")
        return
    say("cached llama.cpp builds:")
    for b in info.builds:
        commit = (b.commit or "unknown commit")[:12]
        say(f"  {b.key}  ({b.backend}, {commit}, built {b.built_at})")
        say(f"    {b.bin_dir}")
        for text in selftest_lines(b.selftest):
            say(f"    {text}")

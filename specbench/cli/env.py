"""`specbench env`: the machine results are measured on, and the cached llama.cpp builds."""

from __future__ import annotations

from typing import Annotated

import typer

from specbench.cli.common import say
from specbench.cli.output import Format, RecordFormat, chosen, print_json


def env(
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
    fmt: RecordFormat = Format.table,
) -> None:
    """Show OS, CPU, RAM, GPUs, versions, the backend `build --backend auto` picks, and cached builds."""
    from specbench.builder.buildinfo import env_report
    from specbench.cli.build import selftest_lines

    info = env_report()
    if chosen(fmt, as_json) == Format.json:
        print_json(info)
        return
    ram = f"{info.ram_gb} GB" if info.ram_gb is not None else "unknown"
    rows = [
        ("host", info.hostname or "unknown"),
        ("os", f"{info.os} ({info.arch})"),
        ("cpu", f"{info.cpu_model}, {info.cpu_cores} cores"),
        ("ram", ram),
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
        line = f"  {b.key}  ({b.backend}, {commit}, built {b.built_at})"
        say(line)
        say(f"    {b.bin_dir}")
        for text in selftest_lines(b.selftest):
            say(f"    {text}")


def register(app: typer.Typer) -> None:
    app.command("env")(env)

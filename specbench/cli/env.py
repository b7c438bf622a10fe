"""`specbench env`: the machine results are measured on, and the cached llama.cpp builds."""

from __future__ import annotations

from typing import Annotated

import typer

from specbench.cli.common import console


def env(
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Show OS, CPU, RAM, GPUs, versions, the backend `build --backend auto` picks, and cached builds."""
    from specbench.builder.envinfo import collect
    from specbench.cli.build import selftest_lines

    info = collect(builds=True)
    if as_json:
        typer.echo(info.model_dump_json(indent=2))
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
        console.print(f"{k:<15} {v}", highlight=False)
    if info.variables:
        listed = ", ".join(f"{k}={v}" for k, v in info.variables.items())
        console.print(f"{'llama env':<15} {listed} (every llama.cpp binary sees them)", highlight=False)
    if not info.gpus:
        console.print(f"{'gpus':<15} none found", highlight=False)
    for gpu in info.gpus:
        mem = f", {gpu.memory_mb} MiB" if gpu.memory_mb else ""
        cap = f", compute {gpu.compute_cap}" if gpu.compute_cap else ""
        console.print(f"{'gpu':<15} {gpu.name} (driver {gpu.driver or '?'}{mem}{cap})", highlight=False)
    if not info.builds:
        console.print("no cached llama.cpp builds; run `specbench build`", highlight=False)
        return
    console.print("cached llama.cpp builds:", highlight=False)
    for b in info.builds:
        commit = (b.commit or "unknown commit")[:12]
        line = f"  {b.key}  ({b.backend}, {commit}, built {b.built_at})"
        console.print(line, highlight=False, soft_wrap=True)
        console.print(f"    {b.bin_dir}", highlight=False, soft_wrap=True)
        for text in selftest_lines(b.selftest):
            console.print(f"    {text}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("env")(env)

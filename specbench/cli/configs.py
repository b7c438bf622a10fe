"""`specbench configs list|copy`: the configs specbench ships, for an install without a clone; and
`specbench schema`: the run config's JSON Schema, for editors and check-jsonschema."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specbench.cli.common import Col, app, check_paths, say
from specbench.cli.output import Format, TableFormat, print_json, print_table

configs_app = typer.Typer(
    help="List and copy the shipped configs (`specbench run NAME` runs one as it is).", no_args_is_help=True
)
app.add_typer(configs_app, name="configs")


@configs_app.command("list")
def configs_list(fmt: TableFormat = Format.table) -> None:
    """List the shipped configs: the name `run` and `configs copy` take, what each is for, its file."""
    from specbench.plan.shipped import shipped_configs

    rows = [[c.name, c.about, str(c.path)] for c in shipped_configs()]
    print_table([Col("name"), Col("about", wrap=True), Col("file", wrap=True)], rows, fmt, box=None,
                drop=("file",), hint="--format md shows the files")  # fmt: skip


@configs_app.command("copy")
def configs_copy(
    name: Annotated[str, typer.Argument(metavar="NAME", help="A name `specbench configs list` shows.")],
    dest: Annotated[
        Path | None,
        typer.Argument(metavar="DEST", help="A file, or a folder to copy into (default: ./NAME.yaml)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace DEST if it exists.")] = False,
) -> None:
    """Copy a shipped config to edit (and the schema its first line points at, beside it)."""
    from specbench.plan.shipped import copy_shipped

    check_paths(("DEST", dest))
    written = copy_shipped(name, dest, force)
    say(f"wrote {', '.join(map(str, written))}; run it with: specbench run {written[0]}")


@app.command("schema")
def schema() -> None:
    """Print the run config's JSON Schema (from the models that validate a config)."""
    from specbench.plan.config import config_schema

    print_json(config_schema())

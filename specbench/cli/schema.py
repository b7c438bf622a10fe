"""`specbench schema`: the run config's JSON Schema, for editors and check-jsonschema."""

from __future__ import annotations

import typer

from specbench.cli.output import print_json


def schema() -> None:
    """Print the run config's JSON Schema (from the models that validate a config)."""
    from specbench.plan.schema import config_schema

    print_json(config_schema())


def register(app: typer.Typer) -> None:
    app.command("schema")(schema)

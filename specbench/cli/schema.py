"""`specbench schema`: the run config's JSON Schema, for editors and check-jsonschema."""

from __future__ import annotations

import json

import typer

from specbench.cli.common import say


def schema() -> None:
    """Print the run config's JSON Schema (from the models that validate a config)."""
    from specbench.plan.schema import config_schema

    say(json.dumps(config_schema(), indent=2))


def register(app: typer.Typer) -> None:
    app.command("schema")(schema)

"""The config's JSON Schema, from the pydantic models that validate it, so an editor checks a config
the way ``specbench run`` would (refusals only the validator can make stay outside it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from specbench.plan.config import Config
from specbench.plan.sections import StrictGeneration

# Where the shipped configs' `# yaml-language-server: $schema=...` line points (tests check it is current).
SCHEMA_FILE = "configs/specbench.schema.json"


class _SchemaConfig(Config):
    """Config as a file may write it: generation settings checked as the loader checks them, and the
    loader's own fields (the file's folder and path) left out."""

    model_config = ConfigDict(title="specbench run config")

    generation: StrictGeneration = Field(
        default_factory=StrictGeneration,
        description="How each invocation generates: tokens, sampling, threads, context.",
    )
    base_dir: SkipJsonSchema[Path] = Field(default=Path("."), exclude=True)
    path: SkipJsonSchema[Path | None] = Field(default=None, exclude=True)


def config_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a run config file."""
    schema = _SchemaConfig.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}

"""The config's JSON Schema, from the pydantic models that validate it, so an editor checks a config
the way ``specbench run`` would (refusals only the validator can make stay outside it)."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
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
    for cls in _models(_SchemaConfig):
        node = schema if cls is _SchemaConfig else schema["$defs"].get(cls.__name__, {})
        _factory_defaults(cls, node.get("properties", {}))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def _models(cls: type[BaseModel]) -> list[type[BaseModel]]:
    """``cls`` and every model its fields hold, however nested (lists, mappings, unions)."""
    found: list[type[BaseModel]] = []

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp not in found:
                found.append(tp)
                for field in tp.model_fields.values():
                    visit(field.annotation)
        for arg in typing.get_args(tp):
            visit(arg)

    visit(cls)
    return found


def _factory_defaults(cls: type[BaseModel], properties: dict[str, Any]) -> None:
    """pydantic leaves out defaults made by a factory (``[8]``, ``[]``); an editor should show them.
    A nested model's default (every key at its default) is left to that model's own keys."""
    for name, field in cls.model_fields.items():
        prop = properties.get(field.alias or name)
        if prop is None or "default" in prop or field.default_factory is None:
            continue
        value = field.get_default(call_default_factory=True)
        if not isinstance(value, BaseModel):
            prop["default"] = value

"""The docs' reference pages, generated from the config's JSON Schema and the typer app, so they cannot
drift from the code (docs/hooks/reference.py writes them at build time)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

from specbench.base.formats import json_text, md_table
from specbench.plan.config import config_schema


def _alternatives(node: dict) -> list[dict]:
    return node.get("anyOf") or node.get("oneOf") or [node]


def _values(node: dict) -> dict | None:
    """A mapping's value schema: additionalProperties, or the one patternProperties entry (``models:``)."""
    if node.get("type") != "object":
        return None
    patterns = list((node.get("patternProperties") or {}).values())
    found = node.get("additionalProperties") if not patterns else patterns[0]
    return found if isinstance(found, dict) else None


def _type(schema: dict, node: dict) -> str:
    """`list of integer`, `integer | "auto"`, `mapping of NAME -> pair` in words."""
    parts = []
    for alt in _alternatives(node):
        if "$ref" in alt:
            parts.append("mapping")
        elif "const" in alt:
            parts.append(json_text(alt["const"], None))
        elif "enum" in alt:
            parts.append(" | ".join(json_text(v, None) for v in alt["enum"]))
        elif alt.get("type") == "array":
            item = _type(schema, alt.get("items", {}))
            parts.append(f"list of ({item})" if " | " in item else f"list of {item}")
        elif (values := _values(alt)) is not None:
            parts.append(f"mapping of NAME -> {_type(schema, values)}")
        elif "type" in alt:
            parts.append(str(alt["type"]))
    return " | ".join(dict.fromkeys(parts)) or "any"


def _bounds(node: dict) -> str:
    """Allowed values beyond the type: ranges, patterns, sizes (of the node and its list items)."""
    out = []
    for alt in _alternatives(node):
        for sub, prefix in ((alt, ""), (alt.get("items") or {}, "each ")):
            for item in _alternatives(sub):
                for key, word in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
                                  ("exclusiveMaximum", "<")):  # fmt: skip
                    if key in item:
                        out.append(f"{prefix}{word} {item[key]}")
                if "pattern" in item:
                    out.append(f"{prefix}matches `{item['pattern']}`")
                if "enum" in item and prefix:
                    out.append(f"{prefix}one of {', '.join(json_text(v, None) for v in item['enum'])}")
        if alt.get("minItems"):
            out.append(f"at least {alt['minItems']} item(s)")
        if alt.get("minProperties"):
            out.append(f"at least {alt['minProperties']} entry")
    return ", ".join(dict.fromkeys(out))


def config_keys(schema: dict | None = None) -> Iterator[tuple[str, dict, bool]]:
    """Every key of a config file, as (dotted key, its schema, required), parents before children."""
    schema = schema or config_schema()
    walked: dict[str, set[str]] = {}

    def walk(prefix: str, model: dict) -> Iterator[tuple[str, dict, bool]]:
        required = set(model.get("required", []))
        for name, prop in model.get("properties", {}).items():
            key = f"{prefix}{name}"
            yield key, prop, name in required
            for alt in _alternatives(prop):
                target = _values(alt)
                if alt.get("type") == "array":
                    target, suffix = alt.get("items", {}), "[]"
                else:
                    suffix = ".NAME" if target else ""
                    target = target if isinstance(target, dict) else alt
                if "$ref" in target and target["$ref"] not in walked.get(key, set()):
                    walked.setdefault(key, set()).add(target["$ref"])  # llama_cpp: one build or a list
                    yield from walk(f"{key}{suffix}.", schema["$defs"][target["$ref"].rsplit("/", 1)[-1]])

    yield from walk("", schema)


def config_reference() -> str:
    """Markdown: one table row per config key."""
    schema = config_schema()
    lines = [
        "# Config reference",
        "",
        "Generated from the pydantic models that validate a config (`specbench/plan/config.py`,",
        "`specbench/models/spec.py`, `specbench/results/manifest.py`) when the site is built;",
        "`specbench schema` prints the same models as a JSON Schema.",
        "`NAME` stands for a name you choose (a model, a pair). `llama_cpp` is one build or a list of",
        "builds, each with the `llama_cpp.*` keys below (in a list, each needs a `label`).",
        "A mapping's keys are in the table of that mapping's name.",
    ]
    tables: dict[str, list[list[str]]] = {}  # one per mapping: the top level, llama_cpp, models.NAME.hf, ...
    for key, prop, required in config_keys(schema):
        default = f"`{json_text(prop['default'], None)}`" if "default" in prop else "-"
        default = "required" if required else default
        tables.setdefault(key.rsplit(".", 1)[0] if "." in key else "", []).append(
            [f"`{key}`", _type(schema, prop), default, _bounds(prop) or "-", prop.get("description", "")]
        )
    for parent, rows in tables.items():
        lines += ["", f"## `{parent}`" if parent else "## Top level", ""]
        lines += md_table(["key", "type", "default", "allowed", "description"], rows)
    return "\n".join(lines) + "\n"


def commands(app: typer.Typer) -> Iterator[tuple[str, Any]]:
    """Every command of the app as ("specbench models pull", its click command), groups first."""

    def walk(path: str, cmd: Any) -> Iterator[tuple[str, Any]]:
        yield path, cmd
        for name in sorted(getattr(cmd, "commands", {})):  # a group (typer vendors its own click)
            yield from walk(f"{path} {name}", cmd.commands[name])

    yield from walk("specbench", typer.main.get_command(app))


def parameters(cmd: Any) -> list[Any]:
    """A command's options and arguments, as --help lists them (``--help`` itself left out)."""
    return [p for p in cmd.params if p.name != "help"]


def context(cmd: Any, path: str) -> Any:
    """The click context --help renders a command in."""
    return cmd.context_class(cmd, info_name=path)


def cli_reference(app: typer.Typer) -> str:
    """Markdown: each command's usage, what it does, and its options and arguments as --help shows them."""
    lines = [
        "# Command reference",
        "",
        "Generated from the typer app (`specbench/cli/`) when the site is built: the same text as",
        "`specbench COMMAND --help`. `--debug` before a command shows the traceback behind an error.",
        "",
    ]
    for path, cmd in commands(app):
        ctx = context(cmd, path)
        lines += [f"{'#' * min(path.count(' ') + 1, 4)}# `{path}`", ""]
        if cmd.help:
            lines += [cmd.help.strip(), ""]
        lines += ["```", cmd.get_usage(ctx).removeprefix("Usage: "), "```", ""]
        if params := parameters(cmd):
            rows = []
            for param in params:
                names, text = param.get_help_record(ctx) or (param.name, "")
                kind = " (argument)" if param.param_type_name == "argument" else ""
                rows.append([f"`{names}`{kind}", text])
            # a | in a code span splits no cell (the site's Markdown): the names are written as they are
            lines += [*md_table(["option", "description"], rows, verbatim=[True]), ""]
    return "\n".join(lines)

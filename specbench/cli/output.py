"""What the commands print, declared once: the formats a result can take (``--format``), the JSON
and Markdown writers every command uses (``specbench.base.formats``), and the one writer of the
GitHub job summary. The plain print settings are ``common.PLAIN``."""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Annotated, Any

import typer

from specbench.base.formats import json_text


class Format(StrEnum):
    """Every format a command prints a result in; each command takes the ones it can write."""

    table = "table"
    md = "md"
    csv = "csv"
    json = "json"
    html = "html"


def format_option(*formats: Format, help: str, short: bool = False) -> Any:
    """The one ``--format`` option: the same name and values everywhere, each command offering the
    formats it writes, shown as ``<table|md|json>``; the value is a ``Format``."""

    def parse(value: str | Format) -> Format:
        if value not in formats:
            offered = ", ".join(repr(str(f)) for f in formats)
            raise typer.BadParameter(f"{str(value)!r} is not one of {offered}.")
        return Format(value)

    names = ("--format", "-f") if short else ("--format",)
    return typer.Option(*names, parser=parse, metavar=f"<{'|'.join(formats)}>", help=help)


# A result table with its verdict (compare, ab, drafts): a table, Markdown (a PR comment) or JSON.
TableFormat = Annotated[
    Format, format_option(Format.table, Format.md, Format.json, help="table, md or json.")
]
# `report`: also CSV and one HTML page (the files it writes beside the table).
ReportFormat = Annotated[Format, format_option(*Format, help="What to print on stdout.", short=True)]


def print_json(data: Any) -> None:
    """A result as strict JSON on stdout (non-finite numbers as null), nothing else there."""
    typer.echo(json_text(data))


def step_summary(markdown: str) -> None:
    """Append a result's Markdown to the GitHub job summary, when the job has one."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(markdown + "\n")

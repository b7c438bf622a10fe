"""What the commands print, declared once: the formats a result can take (``--format``), JSON, the
GitHub job summary, and ``print_table``: a table in any format."""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Annotated, Any

import typer

from specbench.base.formats import csv_text, json_text, md_escape, md_table
from specbench.base.redact import redact
from specbench.cli.common import Col, echo, fitted_table, print_fitted, table_width


class Format(StrEnum):
    """Every format a command prints a result in; each command takes the ones it can write."""

    table = "table"
    md = "md"
    csv = "csv"
    json = "json"
    html = "html"


def format_option(*formats: Format, help: str) -> Any:
    """The one ``--format``/``-f`` option, each command offering the formats it writes."""

    def parse(value: str | Format) -> Format:
        if value not in formats:
            offered = ", ".join(repr(str(f)) for f in formats)
            raise typer.BadParameter(f"{str(value)!r} is not one of {offered}.")
        return Format(value)

    return typer.Option("--format", "-f", parser=parse, metavar=f"<{'|'.join(formats)}>", help=help)


# A result table: CSV holds the rows alone (a verdict goes to stderr), JSON the whole result.
TableFormat = Annotated[
    Format,
    format_option(Format.table, Format.md, Format.csv, Format.json, help="table, md, csv or json."),
]
ReportFormat = Annotated[Format, format_option(*Format, help="What to print on stdout.")]
RecordFormat = Annotated[Format, format_option(Format.table, Format.json, help="table, or json on stdout.")]


def print_json(data: Any, indent: int | None = 2) -> None:
    """A result as strict JSON on stdout (non-finite numbers as null), nothing else there."""
    echo(json_text(data, indent))


def step_summary(markdown: str) -> None:
    """Append a result's Markdown to the GitHub job summary, when the job has one."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(redact(markdown) + "\n")


def chosen(fmt: Format, as_json: bool) -> Format:
    """``--json`` is ``--format json``."""
    return Format.json if as_json else fmt


def print_table(
    cols: list[Col], rows: list[list[str]], fmt: Format, title: str | None = None, drop: tuple[str, ...] = (),
    hint: str = "--format md shows every column", **table_args: Any,
) -> None:  # fmt: skip
    """A table in the chosen format: rich, fitted to the terminal (``drop``: the order columns are left
    out in); Markdown, every column; JSON or CSV, one record per row. ``table_args``: rich's."""
    headers = [c.header for c in cols]
    records = [dict(zip(headers, row, strict=True)) for row in rows]
    if fmt == Format.md:
        table = md_table(headers, rows, [c.right for c in cols])
        echo("\n".join([*([f"### {md_escape(title)}", ""] if title else []), *table]))
    elif fmt == Format.json:
        print_json(records)
    elif fmt == Format.csv:
        echo(csv_text(records), nl=False)
    else:
        fitted, dropped = fitted_table(cols, rows, drop, table_width(), title=title, **table_args)
        print_fitted(fitted, dropped, hint)

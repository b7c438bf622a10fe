"""`specbench parse LOG...`: the statistics in llama.cpp logs captured anywhere, as a table or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specbench.base.errors import ExitCode, ParseError
from specbench.cli.common import app, console, say, state
from specbench.cli.output import Format, RecordFormat, chosen, print_json


def _print(log) -> None:
    """One file: its name, the speculative summary (if any), then the perf blocks side by side."""
    from rich.markup import escape
    from rich.table import Column, Table

    console.print(f"[bold]{escape(str(log.file))}[/bold] ({log.kind})", highlight=False)
    rows = []
    for name in ("encoded", "decoded"):
        if (tp := getattr(log, name)) is not None:
            rows += [(f"{name} {k}", getattr(tp, k)) for k in ("tokens", "seconds", "tps")]
    rows += [(name, getattr(log, name)) for name in ("n_draft", "n_predict", "n_drafted", "n_accept")]
    if log.accept is not None:
        rows.append(("accept", f"{log.accept} ({log.accept * 100:.3f}%)"))  # repr: the printed precision
    rows = [(k, v) for k, v in rows if v is not None]
    if rows:
        summary = Table("metric", Column("value", justify="right"), title="speculative summary")
        for key, value in rows:
            summary.add_row(key, str(value))
        console.print(summary)
    if log.perf is not None:
        blocks = [(n, b) for n, b in (("target", log.perf.target), ("draft", log.perf.draft)) if b]
        perf = Table("metric", *(Column(n, justify="right") for n, _ in blocks), title="perf")
        for key in type(blocks[0][1]).model_fields:
            values = [getattr(b, key) for _, b in blocks]
            if any(v is not None for v in values):
                perf.add_row(key, *("" if v is None else str(v) for v in values))
        console.print(perf)


@app.command("parse")
def parse(
    logs: Annotated[
        list[Path], typer.Argument(metavar="LOG", help="llama.cpp logs (stderr or mixed); - reads stdin.")
    ],
    as_json: Annotated[
        bool,
        typer.Option("--json", help="The same as --format json: a list, one object per file that parsed."),
    ] = False,
    fmt: RecordFormat = Format.table,
) -> None:
    """Show the statistics in llama.cpp logs: speculative summary, draft and target timings.

    Parses every file; each one that fails is reported on stderr and the exit code is 2 (bad input).
    """
    from specbench.parse.process import parse_file

    parsed, failed = [], 0
    for path in logs:
        try:
            parsed.append(parse_file(path))
        except ParseError as exc:
            if state.debug:
                raise
            failed += 1
            say(f"error: {exc}", err=True)
    if chosen(fmt, as_json) == Format.json:
        # inf and nan are real values here (a speculative target's eval t/s): null, named in not_finite
        print_json([log.to_json() for log in parsed])
    else:
        for log in parsed:
            _print(log)
    if failed:
        raise typer.Exit(ExitCode.BAD_INPUT)

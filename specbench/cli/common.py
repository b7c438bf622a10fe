"""Shared CLI state, consoles and option definitions."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from specbench.base.redact import redact

# the command line; each command module registers its commands on it (specbench.cli imports them all)
app = typer.Typer(
    name="specbench",
    help="Benchmark speculative decoding in llama.cpp: build, fetch models, run sweeps, report, compare.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class _Redacted:
    """stdout or stderr as it is at the time (a test swaps them), every text ``redact``ed on its
    way: no line specbench prints shows a credential, whatever value it came from."""

    def __init__(self, err: bool) -> None:
        self._err = err

    @property
    def stream(self) -> Any:
        return sys.stderr if self._err else sys.stdout

    def write(self, text: str) -> int:
        self.stream.write(redact(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def make_console(err: bool = False, **settings: Any) -> Console:
    """A rich console on stdout (stderr with ``err``) whose output is redacted: the CLI's every one."""
    return Console(file=_Redacted(err), **settings)  # type: ignore[arg-type]  # a text stream, duck-typed


def echo(text: str, nl: bool = True) -> None:
    """Text on stdout as it is (JSON, CSV, Markdown: no rich rendering), redacted."""
    typer.echo(redact(text), nl=nl)


# Lines of text never wrap (a wrapped path or command cannot be pasted back); tables still fit.
console = make_console(soft_wrap=True)
err_console = make_console(err=True, soft_wrap=True)
# Tables in CI logs (not a terminal) would be folded at 80 columns; give them room.
table_console = console if console.is_terminal else make_console(width=200)


def say(line: str, err: bool = False, style: str | None = None) -> None:
    """Print a line verbatim and unwrapped (command lines must stay copyable) on stdout, or stderr
    with ``err``; ``style``: its colour. Every line of text the CLI prints goes through here."""
    (err_console if err else console).print(line, style=style, markup=False, highlight=False, soft_wrap=True)


def say_notes(notes: list[str]) -> None:
    """``note: ...`` lines on stderr (stdout may be JSON)."""
    for note in notes:
        say(f"note: {note}", err=True)


@dataclass
class State:
    debug: bool = False


state = State()


@dataclass
class Col:
    """A column of a fitted table: only ``wrap`` columns (free text) may wrap, between words."""

    header: str
    wrap: bool = False
    right: bool = False


WRAP_WIDTH = 24  # a free-text column is given at least this much (or its longest text) before wrapping


def _min_width(col: Col, cells: list[str]) -> int:
    """A header's longest word, and the widest cell (up to ``WRAP_WIDTH`` for free text)."""
    head = max((len(w) for w in col.header.split()), default=1)
    widest = max((len(c) for c in cells), default=0)
    return max(head, min(widest, WRAP_WIDTH) if col.wrap else widest)


def fitted_table(
    cols: list[Col],
    rows: list[list[str]],
    drop_order: tuple[str, ...],
    width: int | None,
    **table_args: Any,
) -> tuple[object, list[str]]:
    """A rich Table whose headers and values are never cut: when ``width`` is too narrow, columns are
    left out in ``drop_order`` and returned by header. ``row_styles``: one style per row."""
    from rich.table import Table
    from rich.text import Text

    styles = table_args.pop("row_styles", None) or [None] * len(rows)
    keep = list(range(len(cols)))
    mins = [_min_width(c, [r[i] for r in rows]) for i, c in enumerate(cols)]
    # the narrowest a free-text column can wrap to: its longest word
    floors = [max((len(w) for t in [c.header, *(r[i] for r in rows)] for w in t.split()), default=1)
              if c.wrap else mins[i] for i, c in enumerate(cols)]  # fmt: skip
    dropped: list[str] = []

    def need(widths: list[int]) -> int:
        return sum(widths[i] + 3 for i in keep) + 1

    for header in drop_order:
        if width is None or need(floors) <= width:
            break
        for i in list(keep):
            if cols[i].header == header and len(keep) > 1:
                keep.remove(i)
                dropped.append(header)
    narrowed: set[int] = set()
    for i in keep:  # free text wraps narrower, down to its longest word, until the table fits
        if width is not None and cols[i].wrap and need(mins) > width:
            mins[i] = max(floors[i], mins[i] - (need(mins) - width))
            narrowed.add(i)
    table = Table(**table_args)
    for i in keep:
        c = cols[i]
        table.add_column(c.header, justify="right" if c.right else "left", no_wrap=not c.wrap,
                         overflow="fold", min_width=mins[i],
                         max_width=mins[i] if i in narrowed else None)  # fmt: skip
    for row, style in zip(rows, styles, strict=True):
        table.add_row(*(Text(row[i]) for i in keep), style=style)  # Text: no markup in names
    return table, dropped


def table_width() -> int | None:
    """The terminal's width for tables; None when not a terminal (logs keep every column)."""
    return console.width if console.is_terminal else None


def print_fitted(table: object, dropped: list[str], hint: str) -> None:
    table_console.print(table)
    if dropped:
        say(f"left out for the terminal's width: {', '.join(dropped)} ({hint})")


def times(value: float | None) -> str:
    """A speedup without its interval (modelled, predicted, at full acceptance): ``1.23x``, or ``-``."""
    return "-" if value is None else f"{value:.2f}x"


def metric_text(value: float | None, metric: str) -> str:
    """A metric's value as `compare` and `history` print it."""
    from specbench.results.metrics import METRICS

    return "-" if value is None else METRICS[metric].text(value)


def check_paths(*named: tuple[str, Path | None]) -> None:
    """Each ``(what, path)`` given (None: not given), refused before any work if no filesystem can hold it."""
    from specbench.base.paths import check_path

    for what, path in named:
        if path is not None:
            check_path(path, what)

"""Shared CLI state, consoles and option definitions."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rich.console import Console

# Lines of text never wrap (a wrapped path or command cannot be pasted back); tables still fit.
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)
# Tables in CI logs (not a terminal) would be folded at 80 columns; give them room.
table_console = console if console.is_terminal else Console(width=200)


class Format(StrEnum):
    """What `compare` and `ab` print: a table, Markdown (a PR comment) or JSON."""

    table = "table"
    md = "md"
    json = "json"


def say(line: str, err: bool = False) -> None:
    """Print verbatim: no markup, no highlighting, no wrapping (command lines must stay copyable)."""
    (err_console if err else console).print(line, markup=False, highlight=False, soft_wrap=True)


@dataclass
class State:
    debug: bool = False


state = State()

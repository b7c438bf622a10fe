"""Shared CLI state, consoles and option definitions."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console

# Lines of text never wrap (a wrapped path or command cannot be pasted back); tables still fit.
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def say(line: str, err: bool = False) -> None:
    """Print verbatim: no markup, no highlighting, no wrapping (command lines must stay copyable)."""
    (err_console if err else console).print(line, markup=False, highlight=False, soft_wrap=True)


@dataclass
class State:
    debug: bool = False


state = State()

"""Shared CLI state, consoles and option definitions."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console

console = Console()
err_console = Console(stderr=True)


@dataclass
class State:
    debug: bool = False


state = State()

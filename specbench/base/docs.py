"""Where a message sends its reader for more: the docs page as this install ships it.

``specbench/docs`` links to ``docs/`` and ships as package data, so a pointer resolves in a clone
and an install alike; every message names a page through ``docs_page``, the one place to change."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def docs_dir() -> Path:
    """The shipped docs pages (``docs/`` in a clone)."""
    return Path(str(files("specbench") / "docs"))


def docs_page(page: str, anchor: str | None = None) -> str:
    """``page`` (and its section ``anchor``) as a message writes it: the file this install has."""
    path = docs_dir() / page
    return f"{path}#{anchor}" if anchor else str(path)

"""Where a message sends its reader for more: the docs page as this install ships it.

``specbench/docs`` links to the repository's ``docs/`` (their one copy), shipped as package data
with the configs, so a pointer in a message resolves in a clone and in an install alike. Every
message names a page through ``docs_page``; tests/base/test_docs.py checks that each page and
anchor exists and that no message spells a ``docs/...`` path of its own. The docs have no site yet
(mkdocs.yml sets no ``site_url``); once they do, ``DOCS`` here is the one place to point at it."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def docs_dir() -> Path:
    """The shipped docs pages (``docs/`` in a clone)."""
    return Path(str(files("specbench") / "docs"))


def docs_page(page: str, anchor: str | None = None) -> str:
    """``PAGE`` (e.g. ``timing.md``) and its section ``anchor`` as a message writes them: the file
    this install has, then ``#anchor`` as the docs site names the section."""
    path = docs_dir() / page
    return f"{path}#{anchor}" if anchor else str(path)

"""The configs specbench ships (``configs/``, package data in an install): listed and copied by
``specbench configs``, and found by name where a CONFIG names no file (``specbench run quickstart``)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from specbench.base.errors import InputError

SCHEMA = "specbench.schema.json"  # beside the configs: their `$schema=./specbench.schema.json` line


@dataclass(frozen=True)
class ShippedConfig:
    name: str  # quickstart, seeds/000-llama3-70b-4090
    path: Path
    about: str  # the file's first comment line after the schema line


def shipped_dir() -> Path:
    """Where this install's configs are (``configs/`` in a clone)."""
    return Path(str(files("specbench") / "configs"))


def _about(path: Path) -> str:
    """The first sentence of the file's opening comment (after the schema line)."""
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if "$schema" in text:
            continue
        if not text and words:
            break
        words.append(text)
    first = " ".join(words).split(". ")[0]
    return first if first.endswith(".") else first + "."


def shipped_configs() -> list[ShippedConfig]:
    """Every shipped config, the top-level ones first, each by the name ``run``/``configs copy`` take."""
    root = shipped_dir()
    found = [*sorted(root.glob("*.yaml")), *sorted(root.glob("seeds/*.yaml"))]
    return [ShippedConfig(p.relative_to(root).with_suffix("").as_posix(), p, _about(p)) for p in found]


def find_shipped(text: str | Path) -> Path | None:
    """The shipped config ``text`` names (``quickstart``, ``configs/quickstart.yaml``...), or None."""
    parts = Path(text).parts
    if not parts or Path(text).is_absolute() or ".." in parts:
        return None
    if parts[0] == "configs":
        parts = parts[1:]
    name = Path(*parts).with_suffix("").as_posix() if parts else ""
    return next((c.path for c in shipped_configs() if c.name == name), None)


def resolve_config(path: Path) -> Path:
    """``path`` when it is there, else the shipped config it names, else ``path``."""
    return path if path.exists() else find_shipped(path) or path


def names_text() -> str:
    return ", ".join(c.name for c in shipped_configs() if "/" not in c.name)


def copy_shipped(name: str, dest: Path | None = None, force: bool = False) -> list[Path]:
    """Copy the shipped config ``name`` to ``dest`` (a file, or a folder to copy into; default
    ./NAME.yaml), with the schema its first line points at beside it when that is not there yet.
    Returns what was written; an existing file is kept unless ``force``."""
    src = find_shipped(name)
    if src is None:
        raise InputError(f"no shipped config {name!r}; `specbench configs list` shows them ({names_text()})")
    target = dest if dest is not None else Path(src.name)
    if target.is_dir():
        target = target / src.name
    if target.exists() and not force:
        raise InputError(f"{target} exists; choose another DEST, or --force to replace it")
    if not target.parent.is_dir():
        raise InputError(f"{target.parent} is not a folder; create it first, or choose another DEST")
    text = src.read_text(encoding="utf-8")  # a seed's schema line points one folder up: here, beside it
    target.write_text(text.replace(f"$schema=../{SCHEMA}", f"$schema=./{SCHEMA}"), encoding="utf-8")
    written = [target]
    schema = target.parent / SCHEMA
    if not schema.exists():
        shutil.copyfile(shipped_dir() / SCHEMA, schema)
        written.append(schema)
    return written

"""GGUF split sets: the ``PREFIX-0000K-of-0000N.gguf`` names of a model's shards, and a set checked whole."""

from __future__ import annotations

import re
from pathlib import Path

from specbench.base.errors import ModelError

_SPLIT_RE = re.compile(r"^(?P<prefix>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


def split_name(name: str) -> tuple[str, int, int] | None:
    """(prefix, shard number, shard count) of a ``PREFIX-0000K-of-0000N.gguf`` name, else None."""
    m = _SPLIT_RE.match(name)
    if not m:
        return None
    return m["prefix"], int(m["no"]), int(m["count"])


def set_names(name: str) -> list[str]:
    """The files of the model ``name`` names, in order: every shard of its split set
    (``PREFIX-00001-of-0000N.gguf`` ...), or ``[name]`` for a single file."""
    info = split_name(name)
    if info is None:
        return [name]
    return [f"{info[0]}-{i:05d}-of-{info[2]:05d}.gguf" for i in range(1, info[2] + 1)]


def shard_paths(first: Path) -> list[Path]:
    """All shards of a split set named after ``first`` (just ``[first]`` for a single file)."""
    return [first.with_name(n) for n in set_names(first.name)]


def check_shards(first: Path) -> list[Path]:
    """The shards of a split set, refusing a set with a shard missing."""
    shards = shard_paths(first)
    if shards[0] != first:
        raise ModelError(
            f"{first.name} is not the first shard of its split set; give {shards[0].name} instead"
        )
    missing = [p.name for p in shards if not p.is_file()]
    if missing:
        raise ModelError(
            f"split GGUF set {first.name} is missing {len(missing)} of {len(shards)} shards "
            f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); "
            f"fetch every shard into {first.parent}"
        )
    return shards

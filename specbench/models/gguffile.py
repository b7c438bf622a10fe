"""GGUF split sets: the ``PREFIX-0000K-of-0000N.gguf`` names of a model's shards, and a set checked whole."""

from __future__ import annotations

import re
from pathlib import Path

from specbench.base.errors import ModelError

_SPLIT_RE = re.compile(r"^(?P<prefix>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


def shard_names(prefix: str, count: int) -> list[str]:
    """The names of a split set, in order: ``PREFIX-00001-of-0000N.gguf`` ..."""
    return [f"{prefix}-{i:05d}-of-{count:05d}.gguf" for i in range(1, count + 1)]


def split_name(name: str) -> tuple[str, int, int] | None:
    """(prefix, shard number, shard count) of a ``PREFIX-0000K-of-0000N.gguf`` name, else None."""
    m = _SPLIT_RE.match(name)
    if not m:
        return None
    return m["prefix"], int(m["no"]), int(m["count"])


def shard_paths(first: Path) -> list[Path]:
    """All shards of a split set named after ``first`` (just ``[first]`` for a single file)."""
    info = split_name(first.name)
    return [first] if info is None else [first.with_name(n) for n in shard_names(info[0], info[2])]


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

"""Files that are whole or absent: a crash, Ctrl-C or a full disk mid-write leaves the old file (or
none), never half of a new one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Temporary files start with this, next to where they land; a stale one is a crash's leftover.
TMP_PREFIX = ".tmp-"


@contextlib.contextmanager
def atomic_path(final: Path, suffix: str = ".part") -> Iterator[Path]:
    """A temporary path next to ``final``, published there if the block succeeds, else removed."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=suffix, dir=final.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        publish(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def publish(tmp: Path, final: Path) -> None:
    """Make ``tmp`` durable and 0644 (mkstemp makes 0600), then rename it durably over ``final``."""
    _fsync(tmp)
    os.chmod(tmp, 0o644)
    os.replace(tmp, final)
    with contextlib.suppress(OSError):  # some filesystems do not sync a folder; the rename happened
        _fsync(final.parent)


def write_atomic(final: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``final`` whole or not at all; OSError is the caller's."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(final, suffix=".tmp") as tmp:
        tmp.write_bytes(raw)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

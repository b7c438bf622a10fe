"""The run folder's lock: one run writes to a folder at a time.

Two runs appending to one sample log would interleave their samples into nonsense, so a run
holds ``fcntl.flock`` on the lock file for as long as it runs; the kernel drops the lock when the
process dies, so a crashed run never leaves a stale lock behind.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from specbench.base.errors import RunError
from specbench.results.folder import LOCK


class RunLock:
    """Held while a run writes to ``run_dir``; a second holder is refused with a RunError."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / LOCK
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise RunError(f"cannot create lock file {self.path}: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunError(
                    f"another specbench run is writing to {self.path.parent} (it holds {LOCK}); "
                    f"wait for it to finish or use another --out folder"
                ) from exc
            raise RunError(f"cannot lock {self.path}: {exc.strerror or exc}") from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_holder(run_dir: Path) -> int | None:
    """The pid of the run writing to ``run_dir`` now (0 when it cannot be read), or None when no
    process holds its lock. The lock, not the manifest, tells: a killed run leaves ``running``."""
    try:
        fd = os.open(run_dir / LOCK, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return None
            head = os.pread(fd, 32, 0).split()
            return int(head[0]) if head and head[0].isdigit() else 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)

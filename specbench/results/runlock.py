"""The run folder's lock: one run writes to a folder at a time.

A run holds ``fcntl.flock`` on the lock file (the kernel drops it when the process dies: no stale
lock); the file also reserves disk space for the manifest's last write on a full disk.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from specbench.base.errors import RunError
from specbench.results.folder import LOCK

# room for an atomic rewrite of the manifest (a large sweep's is a few hundred KB)
RESERVE = 1 << 20


class RunLock:
    """Held while a run writes to ``run_dir``; a second holder is refused with a RunError."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / LOCK
        self._fd: int | None = None
        self._head = 0  # bytes of the pid line (the reserve follows it)

    def acquire(self) -> RunLock:
        while True:
            fd = self._lock_fd()
            try:  # the file may have been removed by the run that held it (release) between open and
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino  # flock: lock the file there now
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        head = f"{os.getpid()}\n".encode()
        os.ftruncate(fd, 0)
        os.write(fd, head)
        self._fd, self._head = fd, len(head)
        _reserve(fd, len(head), RESERVE)
        return self

    def _lock_fd(self) -> int:
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
        return fd

    def free_reserve(self) -> bool:
        """Give the reserved disk space back (to write the manifest on a full disk); whether any was."""
        if self._fd is None:
            return False
        try:
            had = os.fstat(self._fd).st_size > self._head
            os.ftruncate(self._fd, self._head)
        except OSError:
            return False
        return had

    def release(self) -> None:
        """Remove the lock file, then unlock: a run that opened it meanwhile locks a new file."""
        if self._fd is not None:
            try:
                self.path.unlink(missing_ok=True)
            except OSError:
                pass  # a folder made read-only meanwhile: the kernel still drops the lock
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _reserve(fd: int, offset: int, size: int) -> None:
    """Allocate up to ``size`` bytes after ``offset``, as much as the disk has down to 8 KiB (none on a
    nearly full disk); written, not sparse, where fallocate is missing (macOS, ZFS)."""
    while size >= 8192:
        try:
            try:
                os.posix_fallocate(fd, offset, size)
            except (AttributeError, OSError) as exc:
                if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
                    raise
                os.pwrite(fd, b"\xff" * size, offset)
            return
        except OSError:
            try:
                os.ftruncate(fd, offset)
            except OSError:
                return
            size //= 4


def lock_holder(run_dir: Path) -> int | None:
    """The pid of the run writing to ``run_dir`` now (0: unreadable), or None when no process holds
    its lock (a killed run's manifest still says ``running``)."""
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

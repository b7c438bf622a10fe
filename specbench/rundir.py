"""The run folder as a resource: its id, a check that it can be written, and an exclusive lock.

Two runs appending to one samples.jsonl would interleave their samples into nonsense, so a run
holds ``fcntl.flock`` on ``<run>/.lock`` for as long as it runs; the kernel drops the lock when the
process dies, so a crashed run never leaves a stale lock behind.
"""

from __future__ import annotations

import errno
import fcntl
import os
from datetime import datetime
from pathlib import Path

from specbench.errors import RunError
from specbench.store import SAMPLES

LOCK = ".lock"
RAW = "raw"


def make_run_id(name: str, when: datetime | None = None) -> str:
    """``YYYYmmdd-HHMMSS-<config name>`` (local time: it is what a person looks for in results/)."""
    return f"{(when or datetime.now()).strftime('%Y%m%d-%H%M%S')}-{name}"


def check_writable(run_dir: Path) -> None:
    """Create the folder and write a probe file: only a real write proves it (root ignores modes)."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / f".write-test-{os.getpid()}"
        with open(probe, "w") as fh:
            fh.write("ok")
        probe.unlink()
    except OSError as exc:
        raise RunError(
            f"results folder {run_dir} is not writable ({exc.strerror or exc}); "
            f"pass a writable folder with --out DIR or fix its permissions"
        ) from exc


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


def check_fresh(run_dir: Path) -> None:
    """A new run must not append to an old run's samples: that is what --resume is for."""
    if (run_dir / SAMPLES).exists():
        raise RunError(
            f"{run_dir} already holds a run; continue it with --resume {run_dir} or choose another --out"
        )

"""Where specbench keeps its cache: builds, sources and models survive between runs."""

import errno
import os
from pathlib import Path

import platformdirs

from specbench.base.errors import PathError


def home() -> Path:
    """SPECBENCH_HOME, or the user cache dir (``~/.cache/specbench`` on Linux)."""
    env = os.environ.get("SPECBENCH_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("specbench"))


def sources_dir() -> Path:
    return home() / "sources"


def builds_dir() -> Path:
    return home() / "builds"


def models_dir() -> Path:
    return home() / "models"


def calibration_dir() -> Path:
    """Pass costs `specbench tune` measured: SPECBENCH_CALIBRATION, or ``calibration/`` in the cache."""
    env = os.environ.get("SPECBENCH_CALIBRATION")
    return Path(env).expanduser() if env else home() / "calibration"


def results_dir() -> Path:
    """The default results folder: ``results/`` in the current directory (the repository)."""
    return Path(os.environ.get("SPECBENCH_RESULTS", "results"))


# --- paths and names the user gives: one line when the filesystem cannot take them --------------

NAME_MAX = 255  # bytes in one file or folder name (ext4, xfs, apfs, ntfs: 255)
PATH_MAX = 4096  # bytes in a whole path (Linux)


def shorten(path: object, keep: int = 80) -> str:
    """A path for a message: a 300-character name is shown by its ends and its length."""
    text = str(path)
    if len(text) <= keep:
        return text
    return f"{text[: keep - 30]}...{text[-20:]} ({len(text)} characters)"


_ADVICE = {
    errno.ENAMETOOLONG: f"a file or folder name is at most {NAME_MAX} bytes; choose a shorter one",
    errno.ENOENT: "it does not exist; check the path (its folder must exist)",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder; give a file",
    errno.EACCES: "permission denied; choose a writable place or fix its permissions",
    errno.EPERM: "not permitted; choose a writable place or fix its permissions",
    errno.EROFS: "the filesystem is read-only; choose a writable place",
    errno.ENOSPC: "the disk is full; free space",
    errno.EDQUOT: "the disk quota is exceeded; free space",
    errno.EEXIST: "a part of the path is a file, not a folder",  # mkdir(exist_ok=True) over a file
}


def os_problem(exc: OSError, path: object = None) -> str:
    """One line for an OSError: which path, what the system said, what to do."""
    where = path if path is not None else exc.filename
    advice = _ADVICE.get(exc.errno or 0, exc.strerror or str(exc))
    return f"{shorten(where)}: {advice}" if where is not None else advice


def check_path(path: object, what: str) -> None:
    """Refuse, before any work, a path no filesystem here can hold: a name over NAME_MAX bytes or a
    whole over PATH_MAX (the OS would say only 'File name too long', mid-way through the work)."""
    text = str(path)
    for part in Path(text).parts:
        size = len(part.encode("utf-8", "surrogateescape"))
        if size > NAME_MAX:
            name = f"its name {shorten(part, 40)} is" if part != text else "it is"
            raise PathError(
                f"{what} {shorten(text)}: {name} {size} bytes; a file or folder name is at most "
                f"{NAME_MAX} bytes, choose a shorter one"
            )
    if len(os.fsencode(text)) > PATH_MAX:
        raise PathError(f"{what} {shorten(text)}: the path is over {PATH_MAX} bytes; choose a shorter one")


def nearest_existing(path: Path) -> Path:
    """The closest folder above ``path`` that exists (a file there means ``path`` cannot be made)."""
    return next((p for p in [path.parent, *path.parent.parents] if p.exists()), Path("."))


def outermost_missing(path: Path) -> Path | None:
    """The outermost folder of ``path`` that does not exist yet (None: ``path`` exists): what a
    command that made it must remove again when it is refused before writing anything."""
    missing = None
    for folder in [path, *path.parents]:
        if folder.exists():
            break
        missing = folder
    return missing


def remove_empty(path: Path, made: Path | None) -> None:
    """Remove the folders a command made, from ``path`` up to ``made``, while they are empty."""
    if made is None:
        return
    for folder in [path, *path.parents]:
        if folder.is_dir():
            if any(folder.iterdir()):
                return
            folder.rmdir()
        if folder == made:
            return

"""Where specbench keeps its cache: builds, sources and models survive between runs."""

import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import platformdirs
from pydantic import AfterValidator, Field

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
    """Refuse, before any work, a path no filesystem can hold (the OS would say so mid-way)."""
    text = str(path)
    if any(ord(c) < 32 for c in text):
        raise PathError(
            f"{what} {shorten(repr(text))}: it has a control character (NUL, newline...); check the path"
        )
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
    """The outermost missing folder of ``path`` (None: it exists): what a refused command removes."""
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


# --- values from configs, options, files and servers that become parts of a path -----------------
# One rule per kind, checked where the value is parsed, and ``inside`` for every join of such a
# value: a shared config must not write outside its folder (``filename: /home/me/notes.txt``).

# A name specbench itself makes files and folders from (config, model, pair, build, baseline names).
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
_NAME_RE = re.compile(NAME_PATTERN.strip("^$"))
_NAME_ADVICE = "use letters, digits, '.', '_' and '-', starting with a letter or digit"


class UnsafePath(PathError, ValueError):
    """A value that would make a path outside its folder. A ValueError too, so a pydantic
    validator's raise of it becomes the config's one-line ``key: message``."""


@dataclass(frozen=True)
class PathRole:
    """Marks a field whose value becomes (part of) a path: ``name`` (NAME_PATTERN), ``part`` (one
    file or folder name), ``relative`` (a relative path inside a repo or wheel, '/'-separated),
    ``local`` (a path on this machine the user chose: read, never written by the value's say)."""

    kind: str


def _part_problem(part: str) -> str | None:
    if part in ("", ".", ".."):
        return f"a {part!r} part" if part else "an empty part"
    if "/" in part or "\\" in part:
        return "a folder separator"
    if any(ord(c) < 32 or ord(c) == 127 for c in part):
        return "a control character"
    if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX:
        return f"a part over {NAME_MAX} bytes"
    return None


def _refuse(what: str, value: object, problem: str, advice: str) -> UnsafePath:
    shown = shorten(repr(value), 60)
    head = f"{what} {shown}" if what else shown
    return UnsafePath(f"{head}: {problem}; {advice}")


def check_name(value: str, what: str = "") -> str:
    """A name specbench makes a file or folder from (NAME_PATTERN, at most NAME_MAX bytes)."""
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
        raise _refuse(what, value, "not a name", _NAME_ADVICE)
    if len(value) > NAME_MAX:
        raise _refuse(what, value, f"over {NAME_MAX} characters", "choose a shorter name")
    return value


def check_part(value: str, what: str = "") -> str:
    """One file or folder name: no folder separator, not '', '.' or '..', no control character."""
    if value.startswith(("/", "\\")) or value[1:3] in (":/", ":\\"):
        raise _refuse(what, value, "an absolute path", "give a file name without folders")
    problem = _part_problem(value)
    if problem is not None:
        raise _refuse(what, value, f"has {problem}", "give a file name without folders")
    return value


def check_relative(value: str, what: str = "") -> str:
    """A relative '/'-separated path inside a repository or wheel (a glob is fine)."""
    if value.startswith(("/", "\\", "~")) or value[1:3] in (":/", ":\\"):
        raise _refuse(what, value, "an absolute path", "give a path relative to the repository or wheel")
    for part in value.split("/"):
        problem = _part_problem(part)
        if problem is not None:
            raise _refuse(
                what, value, f"has {problem}", "give a path relative to the repository or wheel, without '..'"
            )
    return value


def check_local(value: object, what: str = "") -> object:
    """A path on this machine the user chose: anywhere, but without a control character."""
    text = str(value)
    if any(ord(c) < 32 for c in text):
        raise _refuse(what, text, "has a control character", "check the path")
    return value


def inside(root: Path, *parts: str, what: str = "path") -> Path:
    """``root`` joined with ``parts``, refused when it would lie outside ``root`` (links too)."""
    path = Path(root).joinpath(*parts)
    base = Path(root).resolve()
    if not any(str(p).startswith(("/", "\\")) for p in parts) and ".." not in path.relative_to(root).parts:
        target = path.resolve()
        if target == base or base in target.parents:
            return path
    raise UnsafePath(f"{what} {shorten(str(path))}: it would lie outside {shorten(root)}; refused")


# The rules as pydantic field types, each carrying its PathRole so tests find every path field.
Name = Annotated[
    str, AfterValidator(check_name), PathRole("name"), Field(json_schema_extra={"pattern": NAME_PATTERN})
]
FilePart = Annotated[str, AfterValidator(check_part), PathRole("part")]
RelativePath = Annotated[str, AfterValidator(check_relative), PathRole("relative")]
LocalPath = Annotated[Path, AfterValidator(check_local), PathRole("local")]
LocalPathText = Annotated[str, AfterValidator(check_local), PathRole("local")]

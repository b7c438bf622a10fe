"""Getting a llama.cpp source tree: the pinned submodule, the PyPI sdist fallback, or the user's own.

Without access to git hosting the submodule cannot be fetched, so the same commit is taken from the
``llama-cpp-python`` source distribution on PyPI (it vendors llama.cpp and records the commit) and
cached under ``SPECBENCH_HOME/sources/``. ``--source DIR`` points at any other tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from specbench.base import lifeline, paths
from specbench.base.errors import BuildError
from specbench.base.formats import json_text
from specbench.builder.gitref import run_git
from specbench.parse.crash import last_line

PINNED_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
SDIST_NAME = "llama_cpp_python"
SDIST_VERSION = "0.3.36"
SDIST_REQUIREMENT = f"llama-cpp-python=={SDIST_VERSION}"
MARKER = ".specbench-source.json"  # written into trees specbench extracted, to remember their commit
SUBMODULE = Path("third_party") / "llama.cpp"

# Source files whose content decides the binaries; used to fingerprint trees without a known commit.
_FINGERPRINT_SUFFIXES = set(".c .cc .cpp .cu .cuh .h .hpp .m .metal .txt .cmake .in .comp".split())
_FINGERPRINT_SKIP = {".git", "build", "models", "docs", "media", "gguf-py", "node_modules", "tests"}


@dataclass(frozen=True)
class SourceTree:
    """A llama.cpp tree and what identifies its code (``ident`` keys the build cache)."""

    path: Path
    commit: str | None  # full git sha when known
    ident: str  # commit, commit + "-dirty-<hash>", or "tree-<hash>" when the commit is unknown
    origin: str  # submodule | sdist | git | marker | tree


Progress = Callable[[str], None]


def repo_root() -> Path | None:
    """The specbench checkout this package runs from, if it is one (it holds the submodule)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / ".gitmodules").is_file() else None


def is_llama_tree(path: Path) -> bool:
    """A CMake project with llama.cpp's shape: ggml/ (2024+) or llama.h (any era)."""
    if not (path / "CMakeLists.txt").is_file():
        return False
    return (
        (path / "ggml").is_dir() or (path / "include" / "llama.h").is_file() or (path / "llama.h").is_file()
    )


def _git(args: list[str], cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str] | None:
    try:
        return run_git(args, cwd, timeout)
    except BuildError:
        return None


def _git_commit(path: Path) -> tuple[str, str] | None:
    """(HEAD sha, ident: the sha, with ``-dirty-<hash of the diff>`` when tracked files changed) when
    ``path`` is the top of its own git checkout, else None (a tree copied into some other repository
    is not identified by that repository's commit)."""
    top = _git(["rev-parse", "--show-toplevel"], path)
    if top is None or top.returncode != 0 or Path(top.stdout.strip()).resolve() != path.resolve():
        return None
    head = _git(["rev-parse", "HEAD"], path)
    if head is None or head.returncode != 0:
        return None
    commit = head.stdout.strip()
    status = _git(["status", "--porcelain", "--untracked-files=no"], path)
    if status is None or status.returncode != 0 or not status.stdout.strip():
        return commit, commit
    diff = _git(["diff", "HEAD", "--binary"], path, timeout=120)
    digest = hashlib.sha256(diff.stdout.encode() if diff else b"").hexdigest()[:10]
    return commit, f"{commit}-dirty-{digest}"


def tree_fingerprint(path: Path) -> str:
    """Hash of the relevant source files' names, sizes and modification times (fast: no reading)."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in _FINGERPRINT_SKIP and not d.startswith("."))
        for name in sorted(files):
            if Path(name).suffix in _FINGERPRINT_SUFFIXES:
                full = Path(root) / name
                st = full.stat()
                h.update(f"{full.relative_to(path)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:12]


def read_marker(path: Path) -> str | None:
    try:
        commit = json.loads((path / MARKER).read_text()).get("commit")
    except (OSError, ValueError, AttributeError):
        return None
    return commit if isinstance(commit, str) and commit else None


def describe_tree(path: Path, origin: str = "") -> SourceTree:
    """Identify a llama.cpp tree: its git commit, a marker specbench wrote, or a fingerprint."""
    path = path.expanduser().resolve()
    if not path.is_dir():
        what = "is a file, not a folder" if path.exists() else "does not exist"
        raise BuildError(f"--source {path} {what}; pass the folder of a llama.cpp checkout")
    if not is_llama_tree(path):
        raise BuildError(
            f"{path} is not a llama.cpp tree (no CMakeLists.txt with ggml/ or llama.h); "
            f"pass the root folder of a llama.cpp checkout with --source"
        )
    git = _git_commit(path)
    if git is not None:
        return SourceTree(path, *git, origin or "git")
    marked = read_marker(path)
    if marked is not None:
        return SourceTree(path, marked, marked, origin or "marker")
    return SourceTree(path, None, f"tree-{tree_fingerprint(path)}", origin or "tree")


def cached_sdist_tree(commit: str = PINNED_COMMIT) -> Path:
    return paths.sources_dir() / f"llama.cpp-{commit}"


def extract_sdist(archive: Path, dest: Path, expected_commit: str = PINNED_COMMIT) -> Path:
    """Unpack only ``vendor/llama.cpp`` of a llama-cpp-python sdist into ``dest``, checking the commit
    the sdist recorded for its submodule."""
    try:
        tar = tarfile.open(archive)
    except (OSError, tarfile.TarError) as exc:
        raise BuildError(f"cannot open {archive}: {exc}; delete it and run `specbench build` again") from exc
    with tar:
        members = tar.getmembers()
        tops = {m.name.split("/", 1)[0] for m in members}
        if len(tops) != 1:
            raise BuildError(f"{archive} is not a llama-cpp-python sdist (several top folders)")
        top = tops.pop()
        head_name = f"{top}/.git/modules/vendor/llama.cpp/HEAD"
        try:
            head_file = tar.extractfile(head_name)
            recorded = head_file.read().decode().strip() if head_file else ""
        except KeyError:
            recorded = ""
        if recorded != expected_commit:
            raise BuildError(
                f"{archive.name} records llama.cpp commit {recorded or '(none)'}, not the pinned "
                f"{expected_commit}; pass your own tree with --source DIR"
            )
        prefix = f"{top}/vendor/llama.cpp/"
        wanted = []
        for m in members:
            if not m.name.startswith(prefix) or m.name == prefix + ".git":
                continue
            if m.islnk():
                if not m.linkname.startswith(prefix):
                    continue
                m = m.replace(linkname=m.linkname[len(prefix) :], deep=False)
            m = m.replace(name=m.name[len(prefix) :], deep=False)
            if m.name:
                wanted.append(m)
        if not wanted:
            raise BuildError(f"{archive.name} has no vendor/llama.cpp; pass your own tree with --source DIR")
        dest.mkdir(parents=True, exist_ok=True)
        try:
            tar.extractall(dest, members=wanted, filter="data")
        except (OSError, tarfile.TarError) as exc:
            raise BuildError(f"cannot extract {archive.name} into {dest}: {exc}") from exc
    if not is_llama_tree(dest):
        raise BuildError(
            f"{archive.name} held no usable llama.cpp tree; pass your own tree with --source DIR"
        )
    (dest / MARKER).write_text(
        json_text({"commit": expected_commit, "from": f"{SDIST_REQUIREMENT} (PyPI sdist)"})
    )
    return dest


def _pip_download(dest: Path, progress: Progress | None) -> Path:
    if progress:
        progress(f"downloading {SDIST_REQUIREMENT} source from PyPI (about 1 minute)")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", SDIST_REQUIREMENT]
    cmd += ["-d", str(dest), "--disable-pip-version-check", "--quiet"]
    hint = f"pass a llama.cpp checkout with --source DIR, or run `git submodule update --init {SUBMODULE}`"
    try:
        result = lifeline.run(cmd, timeout=900, text=True)  # pip and its helpers end with specbench
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(
            f"could not fetch the llama.cpp source ({SDIST_REQUIREMENT} from PyPI: {exc}); {hint}"
        ) from exc
    archives = sorted(dest.glob(f"{SDIST_NAME}-{SDIST_VERSION}.tar.gz"))
    if result.returncode != 0 or not archives:
        why = last_line(result.stderr + result.stdout) or f"pip exited {result.returncode}"
        raise BuildError(
            f"could not fetch the llama.cpp source ({SDIST_REQUIREMENT} from PyPI: {why}); {hint}"
        )
    return archives[0]


def fetch_pinned(progress: Progress | None = None) -> Path:
    """The pinned tree from the PyPI sdist, downloaded and extracted once into the cache."""
    dest = cached_sdist_tree()
    if is_llama_tree(dest) and read_marker(dest) == PINNED_COMMIT:
        return dest
    paths.sources_dir().mkdir(parents=True, exist_ok=True)
    with FileLock(str(dest) + ".lock"):
        if is_llama_tree(dest) and read_marker(dest) == PINNED_COMMIT:
            return dest  # another process fetched it while we waited
        with tempfile.TemporaryDirectory(dir=paths.sources_dir(), prefix=".fetch-") as tmp:
            archive = _pip_download(Path(tmp) / "dl", progress)
            if progress:
                progress(f"extracting vendor/llama.cpp from {archive.name}")
            staged = extract_sdist(archive, Path(tmp) / "tree")
            if dest.exists():
                shutil.rmtree(dest)
            staged.rename(dest)
    return dest


def pinned_checkout() -> Path | None:
    """The pinned tree when it is a git checkout (the submodule of a specbench clone), else None;
    looks only, fetches nothing."""
    root = repo_root()
    return root / SUBMODULE if root is not None and is_llama_tree(root / SUBMODULE) else None


def resolve_source(source: Path | str | None = None, progress: Progress | None = None) -> SourceTree:
    """The tree to build: ``source`` if given, else the pinned submodule, else the cached/fetched sdist."""
    if source is not None:
        return describe_tree(Path(source))
    root = repo_root()
    if root is not None and is_llama_tree(root / SUBMODULE):
        return describe_tree(root / SUBMODULE, origin="submodule")
    cached = cached_sdist_tree()
    if is_llama_tree(cached) and read_marker(cached) == PINNED_COMMIT:
        return SourceTree(cached, PINNED_COMMIT, PINNED_COMMIT, "sdist")
    if root is not None:
        if progress:
            progress("trying git submodule update --init third_party/llama.cpp")
        fetched = _git(["submodule", "update", "--init", str(SUBMODULE)], root, timeout=60)
        if fetched is not None and fetched.returncode == 0 and is_llama_tree(root / SUBMODULE):
            return describe_tree(root / SUBMODULE, origin="submodule")
    return SourceTree(fetch_pinned(progress), PINNED_COMMIT, PINNED_COMMIT, "sdist")

"""A git ref of a llama.cpp checkout, read without touching the user's work tree or index.

``resolve_ref`` turns a branch, tag or sha into the commit it names; ``commit_entries`` streams that
commit's files from git's object store (byte for byte what was committed) for ``workarea.sync_tree``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from specbench.base.errors import BuildError

# (path relative to the tree, git mode, content); a symlink's content is its target.
Entry = tuple[str, str, bytes]


@dataclass(frozen=True)
class GitRef:
    """What a ``source`` + ``ref`` pair names: the repository, the tree's folder in it, the commit."""

    source: Path  # the folder the user named
    top: Path  # the repository's top folder
    prefix: str  # the llama.cpp tree's folder inside the repository ("" at the top), with a trailing /
    ref: str  # as the user wrote it
    commit: str  # full sha


def _git_env() -> dict[str, str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):  # a hook's environment must not leak in
        env.pop(name, None)
    return env


def run_git(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``git ARGS`` in ``cwd``, never prompting; a one-line BuildError when git is missing or fails to run."""
    exe = shutil.which("git")
    if exe is None:
        raise BuildError("git not found on PATH; a llama_cpp `ref` needs git (apt install git), or drop it")
    try:
        return subprocess.run(
            [exe, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL, env=_git_env(),
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"git {args[0]} in {cwd} failed: {exc}") from exc


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def resolve_ref(source: Path | str, ref: str) -> GitRef:
    """The commit ``ref`` names in the git checkout ``source``; a one-line BuildError otherwise."""
    src = Path(source).expanduser().resolve()
    if not src.is_dir():
        raise BuildError(f"source {src} does not exist; pass the folder of a llama.cpp git checkout")
    if not ref or ref.startswith("-") or any(c.isspace() for c in ref):
        raise BuildError(f"ref {ref!r} is not a git ref; name a branch, tag or commit of {src}")
    top = run_git(["rev-parse", "--show-toplevel"], src)
    if top.returncode != 0:
        raise BuildError(
            f"ref {ref!r} given, but {src} is not a git checkout ({_first_line(top.stderr) or 'no .git'}); "
            f"drop `ref` to build the tree as it is, or point `source` at a git clone of llama.cpp"
        )
    prefix = run_git(["rev-parse", "--show-prefix"], src).stdout.strip()
    found = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], src)
    commit = found.stdout.strip()
    if found.returncode != 0 or len(commit) < 40:
        raise BuildError(
            f"ref {ref!r} is not a commit in {src}; check the name with `git -C {src} log --oneline {ref}` "
            f"(fetch it first if it is on a remote)"
        )
    return GitRef(src, Path(top.stdout.strip()), prefix, ref, commit)


def short_ref(ref: GitRef) -> str:
    """``main@1a2b3c4d`` or just ``1a2b3c4d`` when the ref is the sha itself."""
    sha = ref.commit[:10]
    return sha if ref.commit.startswith(ref.ref) else f"{ref.ref}@{sha}"


def commit_entries(ref: GitRef) -> Iterator[Entry]:
    """Every file of the tree at ``ref.commit`` (below ``ref.prefix``), read from the object store."""
    treeish = f"{ref.commit}:{ref.prefix}" if ref.prefix else ref.commit
    listing = run_git(["ls-tree", "-r", "-z", "--full-tree", treeish], ref.top, timeout=120)
    if listing.returncode != 0:
        raise BuildError(f"cannot list {short_ref(ref)} in {ref.top}: {_first_line(listing.stderr)}")
    blobs: list[tuple[str, str, str]] = []  # (path, mode, sha)
    for item in listing.stdout.split("\0"):
        if not item:
            continue
        meta, _, path = item.partition("\t")
        mode, kind, sha = meta.split()
        if kind == "blob":  # submodules (commits) have no content here; llama.cpp has none
            blobs.append((path, mode, sha))
    yield from _cat_blobs(ref.top, blobs)


def _cat_blobs(top: Path, blobs: list[tuple[str, str, str]]) -> Iterator[Entry]:
    git = shutil.which("git") or "git"
    proc = subprocess.Popen(
        [git, "cat-file", "--batch"], cwd=top, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=_git_env(),
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def feed() -> None:  # in a thread: writing every name first could fill the pipe both ways
        with suppress(OSError):
            for _, _, sha in blobs:
                stdin.write(sha.encode() + b"\n")
            stdin.close()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        for path, mode, sha in blobs:
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise BuildError(f"git cat-file could not read {path} ({sha}) in {top}")
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)  # the newline after each object
            yield path, mode, data
    finally:
        proc.kill()
        proc.wait()
        writer.join(timeout=5)


def worktree_files(top: Path) -> list[str] | None:
    """The files of a git checkout's work tree that git would commit (a user's build folders and models
    stay out), relative to ``top``; None when ``top`` is not the top of its own checkout."""
    if shutil.which("git") is None:
        return None
    inside = run_git(["rev-parse", "--show-toplevel"], top)
    if inside.returncode != 0 or Path(inside.stdout.strip()).resolve() != top.resolve():
        return None
    listed = run_git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"], top, timeout=120)
    if listed.returncode != 0:
        return None
    return sorted({name for name in listed.stdout.split("\0") if name})

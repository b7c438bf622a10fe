"""The commits a ``specbench bisect`` walks: ``git rev-list --first-parent good..bad`` of a llama.cpp
checkout, each ref checked, every mistake one line (exit 2). Read once, when a bisect starts; the
search itself (``specbench.gate.bisect``) never calls git."""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel

from specbench.base.errors import BuildError, InputError
from specbench.builder.gitref import run_git
from specbench.builder.source import is_llama_tree


class BisectError(InputError):
    """Bad bisect input: a ref that is not there, an empty range (exit 2)."""


class Commit(BaseModel):
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:10]


def _git(source: Path, *args: str) -> str:
    if shutil.which("git") is None:
        raise BisectError("git not found on PATH; bisect needs git")
    try:
        proc = run_git(list(args), source, timeout=120)
    except BuildError as exc:  # git could not run at all (it hung past the timeout)
        raise BisectError(str(exc)) from exc
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if ln.strip()), f"git exited {proc.returncode}")
        raise BisectError(first.strip())
    return proc.stdout


def _resolve(source: Path, ref: str, flag: str) -> str:
    try:
        return _git(source, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except BisectError:
        raise BisectError(f"{flag} {ref}: no such commit in {source} (a branch, tag or sha)") from None


def commit_range(source: Path, good: str, bad: str) -> tuple[str, str, list[Commit]]:
    """The full shas of good and bad, and the first-parent commits after good up to bad."""
    if not source.is_dir():
        raise BisectError(f"--source {source}: not a folder; give a llama.cpp git checkout")
    try:
        inside = _git(source, "rev-parse", "--is-inside-work-tree").strip() == "true"
    except BisectError:
        inside = False
    if not inside:
        raise BisectError(f"--source {source}: not a git checkout; bisect walks its commits")
    good_sha, bad_sha = _resolve(source, good, "--good"), _resolve(source, bad, "--bad")
    if good_sha == bad_sha:
        raise BisectError(
            f"--good {good} and --bad {bad} are the same commit ({good_sha[:10]}): nothing to bisect"
        )
    try:
        _git(source, "merge-base", "--is-ancestor", good_sha, bad_sha)
    except BisectError:
        raise BisectError(
            f"--good {good} is not an ancestor of --bad {bad}: give an older good commit on the same history"
        ) from None
    out = _git(source, "rev-list", "--first-parent", "--reverse", "--format=%H %s", f"{good_sha}..{bad_sha}")
    lines = (line.partition(" ") for line in out.splitlines() if not line.startswith("commit "))  # %H %s
    commits = [Commit(sha=sha, subject=subject) for sha, _, subject in lines]
    if not commits or commits[-1].sha != bad_sha:
        raise BisectError(
            f"no first-parent commits from --good {good} to --bad {bad}: --bad is not on the first-parent "
            f"line after --good (git rev-list --first-parent {good}..{bad} is empty)"
        )
    if not is_llama_tree(source):  # else a one-commit range names --bad without building anything
        raise BisectError(
            f"--source {source} is not a llama.cpp tree (no CMakeLists.txt with ggml/ or llama.h); "
            f"give the root folder of a llama.cpp checkout"
        )
    return good_sha, bad_sha, commits

"""A real (tiny) git history shaped like llama.cpp, for bisect's commit walk and search."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env
    ).stdout


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, list[str]]:
    """8 commits c0..c7 on main, plus a merged side branch after c3 (first-parent skips its commit)."""
    repo = tmp_path_factory.mktemp("hist")
    git(repo, "init", "-q", "-b", "main")
    (repo / "CMakeLists.txt").write_text("project(llama)\n")  # llama.cpp's shape, not its code
    (repo / "llama.h").write_text("\n")
    git(repo, "add", "CMakeLists.txt", "llama.h")
    shas = []
    for i in range(8):
        (repo / "f.txt").write_text(f"{i}\n")
        git(repo, "add", "f.txt")
        git(repo, "commit", "-qm", f"c{i}")
        shas.append(git(repo, "rev-parse", "HEAD").strip())
        if i == 3:
            git(repo, "checkout", "-qb", "side")
            (repo / "side.txt").write_text("s\n")
            git(repo, "add", "side.txt")
            git(repo, "commit", "-qm", "side")
            git(repo, "checkout", "-q", "main")
            git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
            shas.append(git(repo, "rev-parse", "HEAD").strip())
    return repo, shas

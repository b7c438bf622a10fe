"""specbench.builder.workarea: which files of a user's tree a build copies (it never builds in place)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from specbench.builder.workarea import tree_entries


def test_a_plain_tree_is_copied_without_its_build_folders(tmp_path):
    (tmp_path / "build-cpu").mkdir()
    (tmp_path / "build-cpu" / "huge.o").write_bytes(b"x")
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "build-info.cpp.in").write_text("@BUILD_NUMBER@")
    (tmp_path / "CMakeLists.txt").write_text("project(x)")
    assert sorted(rel for rel, _, _ in tree_entries(tmp_path)) == [
        "CMakeLists.txt",
        "common/build-info.cpp.in",
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_git_checkout_is_copied_as_git_would_commit_it(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(
            ["git", *args], cwd=tmp_path, check=True, capture_output=True, stdin=subprocess.DEVNULL
        )

    git("init", "-q")
    (tmp_path / ".gitignore").write_text("/build*\n*.gguf\n")
    (tmp_path / "CMakeLists.txt").write_text("project(x)")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "big.gguf").write_bytes(b"GGUF")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "CMakeCache.txt").write_text("")
    (tmp_path / "new.cpp").write_text("int x;")  # untracked, not ignored: part of the user's tree
    git("add", ".gitignore", "CMakeLists.txt")
    got = {rel: data for rel, _, data in tree_entries(tmp_path)}
    assert sorted(got) == [".gitignore", "CMakeLists.txt", "new.cpp"] and got["new.cpp"] == b"int x;"

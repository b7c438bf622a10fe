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


def _ik_layout(root):
    """ik_llama.cpp's sdist: common/CMakeLists.txt runs common/cmake/build-info-gen-cpp.cmake, absent."""
    (root / "common").mkdir(parents=True)
    (root / "cmake").mkdir()
    (root / "common" / "CMakeLists.txt").write_text(
        'add_custom_command(OUTPUT build-info.cpp COMMAND ${CMAKE_COMMAND} -P "${CMAKE_CURRENT_SOURCE_DIR}'
        '/cmake/build-info-gen-cpp.cmake")\n'
    )
    (root / "common" / "build-info.cpp.in").write_text(
        'int LLAMA_BUILD_NUMBER = @BUILD_NUMBER@;\nchar const *LLAMA_COMMIT = "@BUILD_COMMIT@";\n'
    )
    (root / "cmake" / "build-info.cmake").write_text('set(BUILD_NUMBER 0)\nset(BUILD_COMMIT "unknown")\n')
    return root


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_the_build_details_generator_a_tree_runs_but_lacks_is_supplied_in_the_copy(tmp_path):
    from specbench.builder.workarea import BUILD_INFO_GENERATOR, supply_missing

    src = _ik_layout(tmp_path / "src")
    assert supply_missing(src) == [BUILD_INFO_GENERATOR]
    run = subprocess.run(
        ["cmake", "-P", str(src / BUILD_INFO_GENERATOR)], cwd=src, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr  # it runs as the tree's CMake runs it: from the tree's root
    assert 'LLAMA_COMMIT = "unknown"' in (src / "common" / "build-info.cpp").read_text()
    assert supply_missing(src) == []  # present now: left alone
    (tmp_path / "other" / "common").mkdir(parents=True)
    (tmp_path / "other" / "common" / "CMakeLists.txt").write_text("add_library(common x.cpp)\n")
    assert supply_missing(tmp_path / "other") == []  # a tree that does not run it


def test_a_tree_lacking_the_generator_and_what_it_reads_is_refused_in_one_line_naming_them(tmp_path):
    """Without cmake/build-info.cmake specbench cannot write the generator either: the build would
    stop inside cmake; it is refused before configuring, naming the user's folder and the files."""
    from specbench.base.errors import BuildError
    from specbench.builder.workarea import BUILD_INFO_GENERATOR, supply_missing

    src = _ik_layout(tmp_path / "src")
    (src / "cmake" / "build-info.cmake").unlink()
    with pytest.raises(BuildError) as info:
        supply_missing(src, tmp_path / "users-tree")
    msg = str(info.value)
    assert "\n" not in msg and str(tmp_path / "users-tree") in msg
    assert BUILD_INFO_GENERATOR in msg and "cmake/build-info.cmake" in msg and "git clone" in msg
    assert not (src / BUILD_INFO_GENERATOR).exists()

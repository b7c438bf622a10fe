"""Building a git ref: the commit is exported (the user's work tree and index untouched), a second
commit recompiles only what changed, each commit is cached by sha, and bad refs are one line.
On tiny CMake trees (seconds); the real llama.cpp history is in test_refs_real.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from specbench.base.errors import BuildError
from specbench.builder.builder import ensure_build
from specbench.builder.buildplan import BUILD_JSON, build_dir_for
from specbench.builder.cmake import CompileError
from specbench.builder.gitref import commit_entries, resolve_ref
from specbench.builder.workarea import dir_entries, sync_tree
from tests.fixtures.build import assert_one_line_error, cli, fake_llama_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_AUTHOR_DATE": "1767225600 +0000",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "GIT_COMMITTER_DATE": "1767225600 +0000",
}  # fmt: skip


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


MAIN = r"""#include <cstdio>
int helper();
int main(int argc, char **) { if (argc > 1) std::printf("version: 1 (fake)\n"); return helper() - 7; }
"""
CMAKE = (
    "cmake_minimum_required(VERSION 3.14)\nproject(llama CXX)\n"
    "add_executable(llama-completion main.cpp a.cpp b.cpp c.cpp helper.cpp)\n"
)


def fake_repo(root: Path) -> tuple[Path, list[str]]:
    """A llama.cpp-shaped git checkout of five sources; commit 2 changes one of them."""
    fake_llama_tree(root, MAIN)
    (root / "CMakeLists.txt").write_text(CMAKE)
    for name in "abc":
        (root / f"{name}.cpp").write_text(f"int {name}_unused() {{ return 1; }}\n")
    (root / "helper.cpp").write_text("int helper() { return 7; }\n")
    git(root, "init", "-q", "-b", "main")
    first = commit_all(root, "one")
    (root / "helper.cpp").write_text("int helper() { return 8; }\n")
    second = commit_all(root, "two")
    git(root, "tag", "v1", first)
    return root, [first, second]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_resolve_ref_names_the_commit(tmp_path):
    repo, shas = fake_repo(tmp_path / "repo")
    assert resolve_ref(repo, "main").commit == shas[1]
    assert resolve_ref(repo, "v1").commit == shas[0]
    assert resolve_ref(repo, shas[0][:8]).commit == shas[0]
    assert resolve_ref(repo, "main~1").commit == shas[0]


@pytest.mark.parametrize("ref", ["nope", "main~5", "-h", "a b"])
def test_a_ref_that_does_not_exist_is_one_line(tmp_path, ref):
    repo, _ = fake_repo(tmp_path / "repo")
    with pytest.raises(BuildError) as exc:
        resolve_ref(repo, ref)
    assert "\n" not in str(exc.value) and repr(ref) in str(exc.value)


def test_a_ref_in_a_plain_tree_is_one_line(tmp_path):
    tree = fake_llama_tree(tmp_path / "plain")
    with pytest.raises(BuildError, match="is not a git checkout.*drop `ref`"):
        resolve_ref(tree, "main")


def test_export_is_the_commit_not_the_work_tree(tmp_path):
    """Uncommitted edits, staged or not, and untracked files stay out; the index is not touched."""
    repo, shas = fake_repo(tmp_path / "repo")
    (repo / "helper.cpp").write_text("int helper() { return 0; } // edited\n")
    (repo / "new.cpp").write_text("// untracked\n")
    git(repo, "add", "helper.cpp")
    index_before = (repo / ".git" / "index").read_bytes()
    status_before = git(repo, "status", "--porcelain")
    files = {path: data for path, _, data in commit_entries(resolve_ref(repo, shas[0]))}
    assert files["helper.cpp"] == b"int helper() { return 7; }\n"
    assert (
        "new.cpp" not in files
        and ".git" not in files
        and set(files) >= {"CMakeLists.txt", "ggml/CMakeLists.txt"}
    )
    assert (repo / ".git" / "index").read_bytes() == index_before
    assert git(repo, "status", "--porcelain") == status_before
    assert (repo / "helper.cpp").read_text().endswith("// edited\n")


def test_sync_rewrites_only_what_differs(tmp_path):
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "same.txt").write_text("same")
    (src / "d" / "changes.txt").write_text("old")
    (src / "gone.txt").write_text("bye")
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o755)
    (src / "link").symlink_to("same.txt")
    dest = tmp_path / "dest"
    first = sync_tree(dir_entries(src), dest)
    assert (first.written, first.removed) == (5, 0)
    assert os.access(dest / "run.sh", os.X_OK) and os.readlink(dest / "link") == "same.txt"
    old = 1_000_000_000
    for p in (dest / "same.txt", dest / "d" / "changes.txt"):
        os.utime(p, ns=(old, old))
    (src / "d" / "changes.txt").write_text("new")
    (src / "gone.txt").unlink()
    again = sync_tree(dir_entries(src), dest)
    assert (again.written, again.removed, again.unchanged) == (1, 1, 3)
    assert (dest / "same.txt").stat().st_mtime_ns == old  # unchanged: Ninja will not recompile it
    assert (dest / "d" / "changes.txt").read_text() == "new" and (
        dest / "d" / "changes.txt"
    ).stat().st_mtime_ns > old
    assert not (dest / "gone.txt").exists()


def test_two_commits_build_once_each_the_second_incrementally(tmp_path, home):
    """Commit 1 compiles everything; commit 2 (one file changed) recompiles that file and relinks;
    asking again is the cache. The user's tree is never written to."""
    repo, shas = fake_repo(tmp_path / "repo")
    (repo / "main.cpp").write_text("this is not C++, and the work tree is not what a ref builds\n")
    before = {p: p.stat().st_mtime_ns for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    one = ensure_build(backend="cpu", source=repo, ref="v1", jobs=1)
    two = ensure_build(backend="cpu", source=repo, ref="main", jobs=1)
    assert (one.commit, two.commit) == (shas[0], shas[1]) and (one.ref, two.ref) == ("v1", "main")
    assert one.origin == two.origin == "git-ref" and one.source == two.source == str(repo.resolve())
    assert one.key != two.key and one.work_area == two.work_area
    assert (one.build_steps, two.build_steps) == (6, 2)  # five objects and the link; helper.cpp and the link
    for info in (one, two):
        assert Path(info.bin_dir).parent == build_dir_for(info.key)
        assert (build_dir_for(info.key) / BUILD_JSON).is_file()
        assert f"-DLLAMA_BUILD_COMMIT={info.commit[:7]}" in info.cmake_args
    # each build's binary is its own copy: the second build did not change the first's
    exits = [subprocess.run([b.binary("completion").path], check=False).returncode for b in (one, two)]
    assert exits == [0, 1]
    assert ensure_build(backend="cpu", source=repo, ref=shas[0][:10], jobs=1).key == one.key  # by commit
    # another clone of the history at that commit: the cached build, named as this caller asked (its
    # errors name this checkout, not the one that happened to build it first)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    again = ensure_build(backend="cpu", source=clone, ref=shas[0], jobs=1)
    assert again.key == one.key and again.source == str(clone.resolve()) and again.ref == shas[0]
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_a_commit_that_does_not_compile_is_the_first_error_line(tmp_path, home):
    repo, _ = fake_repo(tmp_path / "repo")
    (repo / "a.cpp").write_text("int a_unused() { return first_problem; }\n")
    (repo / "b.cpp").write_text("int b_unused() { return second_problem; }\n")
    commit_all(repo, "broken")
    with pytest.raises(CompileError) as exc:
        ensure_build(backend="cpu", source=repo, ref="main", jobs=1)
    assert "first_problem" in str(exc.value) and "second_problem" not in str(exc.value)
    result = cli(
        "build",
        "--backend",
        "cpu",
        "--source",
        str(repo),
        "--ref",
        "main",
        "-j",
        "1",
        env={"SPECBENCH_HOME": str(home)},
    )
    last = assert_one_line_error(result, "compiling llama.cpp failed", "first_problem", "build.log")
    assert "second_problem" not in last


def test_the_cli_builds_a_ref_and_refuses_bad_ones(tmp_path, home):
    repo, shas = fake_repo(tmp_path / "repo")
    env = {"SPECBENCH_HOME": str(home)}
    ok = cli("build", "--backend", "cpu", "--source", str(repo), "--ref", "v1", "-j", "1", env=env)
    assert ok.returncode == 0, ok.stderr
    assert shas[0] in ok.stdout and "@v1" in ok.stdout
    assert_one_line_error(
        cli("build", "--source", str(repo), "--ref", "nope", env=env), "'nope' is not a commit"
    )
    plain = fake_llama_tree(tmp_path / "plain")
    assert_one_line_error(
        cli("build", "--source", str(plain), "--ref", "main", env=env), "not a git checkout"
    )


def test_a_tree_in_a_subfolder_of_a_repository_exports_that_folder(tmp_path):
    """A monorepo with llama.cpp in vendor/llama.cpp: the ref's export is the subfolder's files only."""
    top = tmp_path / "mono"
    fake_llama_tree(top / "vendor" / "llama.cpp")
    (top / "README").write_text("not llama.cpp\n")
    git(top, "init", "-q", "-b", "main")
    sha = commit_all(top, "one")
    ref = resolve_ref(top / "vendor" / "llama.cpp", "main")
    assert (ref.commit, ref.prefix, ref.top) == (sha, "vendor/llama.cpp/", top.resolve())
    files = {path for path, _, _ in commit_entries(ref)}
    assert files == {"CMakeLists.txt", "main.cpp", "ggml/CMakeLists.txt"}

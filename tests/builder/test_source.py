"""specbench.builder.source: which tree gets built and what identifies it; the sdist route's checks."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from specbench.base.errors import BuildError
from specbench.builder import source
from specbench.builder.source import MARKER, PINNED_COMMIT, describe_tree, extract_sdist, fetch_pinned
from tests.fixtures.build import assert_one_line_error, cli, fake_llama_tree

TOP = "llama_cpp_python-0.3.36"


def _sdist(path: Path, head: str | None, extra: dict[str, bytes] | None = None) -> Path:
    """A tiny stand-in for the llama-cpp-python sdist: same layout, a few bytes of tree."""
    files = {
        f"{TOP}/setup.py": b"# not llama.cpp\n",
        f"{TOP}/vendor/llama.cpp/CMakeLists.txt": b"project(llama)\n",
        f"{TOP}/vendor/llama.cpp/ggml/CMakeLists.txt": b"# ggml\n",
        f"{TOP}/vendor/llama.cpp/include/llama.h": b"// llama\n",
        f"{TOP}/vendor/llama.cpp/.git": b"gitdir: ../../.git/modules/vendor/llama.cpp\n",
        **(extra or {}),
    }
    if head is not None:
        files[f"{TOP}/.git/modules/vendor/llama.cpp/HEAD"] = head.encode() + b"\n"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_pin_matches_the_submodule_gitlink():
    root = source.repo_root()
    if root is None or shutil.which("git") is None:
        pytest.skip("not running from a specbench git checkout")
    out = subprocess.run(
        ["git", "ls-files", "-s", str(source.SUBMODULE)], cwd=root, capture_output=True, text=True
    )
    if not out.stdout.strip():
        pytest.skip("no gitlink in this checkout")
    assert out.stdout.split()[1] == PINNED_COMMIT


def test_sdist_with_the_pinned_commit_extracts_only_the_tree(tmp_path):
    archive = _sdist(tmp_path / "sd.tar.gz", PINNED_COMMIT)
    dest = extract_sdist(archive, tmp_path / "out")
    assert (dest / "CMakeLists.txt").read_text() == "project(llama)\n"
    assert (dest / "include" / "llama.h").is_file()
    assert not (dest / ".git").exists()  # it would point at a gitdir that is not there
    assert not (dest / "setup.py").exists() and not (tmp_path / "out" / TOP).exists()
    assert json.loads((dest / MARKER).read_text())["commit"] == PINNED_COMMIT
    assert describe_tree(dest).commit == PINNED_COMMIT  # the marker names the commit from now on


def test_sdist_with_another_commit_is_refused(tmp_path):
    archive = _sdist(tmp_path / "sd.tar.gz", "deadbeef" * 5)
    with pytest.raises(BuildError) as exc:
        extract_sdist(archive, tmp_path / "out")
    assert "deadbeef" in str(exc.value) and PINNED_COMMIT in str(exc.value) and "\n" not in str(exc.value)
    assert not (tmp_path / "out").exists()


def test_sdist_without_a_recorded_commit_is_refused(tmp_path):
    with pytest.raises(BuildError, match="records llama.cpp commit \\(none\\)"):
        extract_sdist(_sdist(tmp_path / "sd.tar.gz", None), tmp_path / "out")


def test_sdist_member_escaping_the_tree_is_refused(tmp_path):
    evil = {f"{TOP}/vendor/llama.cpp/../../../../escaped.txt": b"x"}
    with pytest.raises(BuildError):
        extract_sdist(_sdist(tmp_path / "sd.tar.gz", PINNED_COMMIT, evil), tmp_path / "a" / "b" / "out")
    assert not list(tmp_path.rglob("escaped.txt"))


def test_not_a_tarball_is_one_line(tmp_path):
    bad = tmp_path / "sd.tar.gz"
    bad.write_bytes(b"not a tar")
    with pytest.raises(BuildError, match="cannot open"):
        extract_sdist(bad, tmp_path / "out")


def test_fetch_failure_says_what_to_do(tmp_path, monkeypatch):
    """PyPI unreachable (an index on a closed port): one line pointing at --source and the submodule."""
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    with pytest.raises(BuildError) as exc:
        fetch_pinned()
    message = str(exc.value)
    assert "\n" not in message and "--source" in message and "submodule" in message
    assert not source.cached_sdist_tree().exists()


def test_source_that_is_not_a_llama_tree(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text("project(other)\n")
    with pytest.raises(BuildError, match="not a llama.cpp tree"):
        describe_tree(tmp_path)
    result = cli(
        "build", "--backend", "cpu", "--source", str(tmp_path), env={"SPECBENCH_HOME": str(tmp_path)}
    )
    assert_one_line_error(result, "not a llama.cpp tree", str(tmp_path))
    missing = cli("build", "--source", str(tmp_path / "nope"), env={"SPECBENCH_HOME": str(tmp_path)})
    assert_one_line_error(missing, "does not exist")
    (tmp_path / "afile").write_text("x")
    a_file = cli("build", "--source", str(tmp_path / "afile"), env={"SPECBENCH_HOME": str(tmp_path)})
    assert_one_line_error(a_file, "is a file, not a folder")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_checkout_is_identified_by_its_commit(tmp_path):
    tree = fake_llama_tree(tmp_path / "llama.cpp")
    _git(tree, "init", "-q")
    _git(tree, "add", ".")
    _git(tree, "commit", "-q", "-m", "x")
    head = _git(tree, "rev-parse", "HEAD")
    clean = describe_tree(tree)
    assert (clean.commit, clean.ident, clean.origin) == (head, head, "git")
    (tree / "main.cpp").write_text("int main() { return 1; }\n")
    dirty = describe_tree(tree)
    assert dirty.commit == head and dirty.ident.startswith(head + "-dirty-")
    (tree / "main.cpp").write_text("int main() { return 2; }\n")
    assert describe_tree(tree).ident not in {dirty.ident, head}  # each edit is its own build


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_tree_inside_another_repository_is_not_given_that_commit(tmp_path):
    _git(tmp_path, "init", "-q")
    tree = fake_llama_tree(tmp_path / "vendor" / "llama.cpp")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "x")
    found = describe_tree(tree)
    assert found.commit is None and found.ident.startswith("tree-")


def test_plain_tree_is_fingerprinted(tmp_path):
    tree = fake_llama_tree(tmp_path / "t")
    first = describe_tree(tree)
    assert first.commit is None and first.origin == "tree"
    assert describe_tree(tree).ident == first.ident
    (tree / "main.cpp").write_text("int main() { return 3; /* changed */ }\n")
    assert describe_tree(tree).ident != first.ident

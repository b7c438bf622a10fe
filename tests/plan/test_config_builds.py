"""`llama_cpp:` as one build or a list of labelled builds: what validates, and the one-line errors
for labels, sources and refs (a ref is checked against git before anything is built)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from specbench.plan.config import load_config
from tests.helpers.configs import GOOD, error_of, write

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git_repo(path: Path) -> str:
    """A one-commit git checkout shaped like llama.cpp; returns the commit."""
    path.mkdir(parents=True)
    (path / "ggml").mkdir()
    (path / "CMakeLists.txt").write_text("project(llama)\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "one"]):
        subprocess.run(
            ["git", *args], cwd=path, check=True, capture_output=True, env={**env, "PATH": "/usr/bin:/bin"}
        )
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True
    ).stdout.strip()


def with_builds(cfg_dir: Path, builds: str) -> Path:  # noqa: F811
    return write(cfg_dir, GOOD + builds)


def test_one_build_is_one_unlabelled_build(cfg_dir):  # noqa: F811
    cfg = load_config(with_builds(cfg_dir, "llama_cpp: {backend: cpu}\n"))
    assert [b.backend for b in cfg.builds] == ["cpu"] and cfg.build_labels == [None]
    dumped = cfg.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped["llama_cpp"] == {"backend": "cpu", "cmake_args": [], "args": []}


@needs_git
def test_a_list_of_builds_keeps_order_labels_and_resolves_sources(cfg_dir):  # noqa: F811
    git_repo(cfg_dir / "llama.cpp")
    path = with_builds(
        cfg_dir,
        "llama_cpp:\n"
        "  - {label: base, source: llama.cpp, ref: main, backend: cpu}\n"
        "  - {label: head, source: llama.cpp, backend: cpu, cmake_args: [-DGGML_NATIVE=OFF]}\n",
    )
    cfg = load_config(path)
    assert cfg.build_labels == ["base", "head"]
    assert cfg.builds[0].source == (cfg_dir / "llama.cpp").resolve() and cfg.builds[0].ref == "main"
    assert cfg.builds[1].ref is None and cfg.builds[1].cmake_args == ["-DGGML_NATIVE=OFF"]
    # the manifest keeps the list, and the list loads again (what --resume does)
    builds = cfg.model_dump(mode="json", by_alias=True, exclude_none=True)["llama_cpp"]
    again = load_config(write(cfg_dir, GOOD + "llama_cpp: " + json.dumps(builds) + "\n", "b.yaml"))
    assert again.builds == cfg.builds


def test_two_labels_of_one_build_are_a_valid_a_a(cfg_dir):  # noqa: F811
    cfg = load_config(
        with_builds(cfg_dir, "llama_cpp: [{label: a, backend: cpu}, {label: b, backend: cpu}]\n")
    )
    assert cfg.build_labels == ["a", "b"]


def test_builds_by_set_override(cfg_dir):  # noqa: F811
    """What `specbench ab` does: the builds as a JSON list through --set."""
    entries = [{"label": "base", "backend": "cpu"}, {"label": "head", "backend": "cpu"}]
    cfg = load_config(with_builds(cfg_dir, ""), ["llama_cpp=" + json.dumps(entries)])
    assert cfg.build_labels == ["base", "head"]


@pytest.mark.parametrize(
    ("builds", "words"),
    [
        ("llama_cpp: [{label: a}, {backend: cpu}]\n", ["llama_cpp:", "build 2 of 2 has no label"]),
        ("llama_cpp: [{label: a}, {label: a}]\n", ["llama_cpp:", "builds 1 and 2 are both labelled 'a'"]),
        ("llama_cpp: []\n", ["llama_cpp:", "at least one build"]),
        ("llama_cpp: [{label: 'a b'}]\n", ["llama_cpp[0].label:", "'a b': not a name"]),
        ("llama_cpp: [{label: a, bogus: 1}]\n", ["llama_cpp[0].bogus: unknown key"]),
        ("llama_cpp: {bogus: 1}\n", ["llama_cpp.bogus: unknown key"]),
        ("llama_cpp: [{label: a, backend: rocm}]\n", ["llama_cpp[0].backend: must be one of"]),
        ("llama_cpp: [{label: a, ref: ''}]\n", ["llama_cpp[0].ref:"]),
        ("llama_cpp: [{label: a, source: nowhere}]\n", ["llama_cpp[0].source:", "is not a folder"]),
    ],
)
def test_bad_builds_are_one_line(cfg_dir, builds, words):  # noqa: F811
    message = error_of(with_builds(cfg_dir, builds))
    for word in words:
        assert word in message, message
    assert "@list" not in message and "@one" not in message


@needs_git
def test_a_ref_that_does_not_exist(cfg_dir):  # noqa: F811
    git_repo(cfg_dir / "llama.cpp")
    message = error_of(
        with_builds(cfg_dir, "llama_cpp: [{label: a, source: llama.cpp, ref: no-such-branch}]\n")
    )
    assert "llama_cpp[0].ref:" in message and "'no-such-branch' is not a commit in" in message


@needs_git
def test_a_ref_in_a_tree_that_is_not_a_git_checkout(cfg_dir, tmp_path_factory):  # noqa: F811
    plain = tmp_path_factory.mktemp("plain") / "llama.cpp"
    plain.mkdir()
    message = error_of(with_builds(cfg_dir, f"llama_cpp: {{source: {plain}, ref: main}}\n"))
    assert "llama_cpp.ref:" in message and "is not a git checkout" in message and "drop `ref`" in message


def test_a_ref_without_a_source_needs_a_git_checkout(cfg_dir, monkeypatch):  # noqa: F811
    monkeypatch.setattr("specbench.builder.source.pinned_checkout", lambda: None)
    message = error_of(with_builds(cfg_dir, "llama_cpp: {ref: main}\n"))
    assert "llama_cpp.ref: a ref needs a `source` git checkout" in message

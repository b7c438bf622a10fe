"""bisect's commit walk (specbench.gate.commits) on a real (tiny) git history (conftest.py)."""

from __future__ import annotations

import subprocess

import pytest

from specbench.gate.commits import BisectError, commit_range
from tests.gate.conftest import git


def test_the_range_is_first_parent_after_good_up_to_bad(history):
    repo, shas = history
    good, bad, commits = commit_range(repo, shas[0], "main")
    assert good == shas[0] and bad == shas[-1]
    assert [c.sha for c in commits] == shas[1:]  # the merge counts once, the side commit not at all
    assert commits[3].subject == "merge side"


@pytest.mark.parametrize(
    "good, bad, words",
    [
        ("main", "main", "same commit"),
        ("nope", "main", "--good nope: no such commit"),
        ("main", "main~3", "not an ancestor"),
    ],
)
def test_bad_ranges_are_one_line_errors(history, good, bad, words):
    repo, _ = history
    with pytest.raises(BisectError, match=words):
        commit_range(repo, good, bad)


def test_a_folder_that_is_not_a_checkout(tmp_path):
    with pytest.raises(BisectError, match="not a git checkout"):
        commit_range(tmp_path, "a", "b")


def test_a_checkout_that_is_not_llama_cpp(tmp_path):
    """Even a one-commit range (whose answer needs no build) is refused: nothing would be measured."""
    git(tmp_path, "init", "-q", "-b", "main")
    for i in range(2):
        (tmp_path / "README").write_text(f"{i}\n")
        git(tmp_path, "add", "README")
        git(tmp_path, "commit", "-qm", f"c{i}")
    with pytest.raises(BisectError, match="is not a llama.cpp tree"):
        commit_range(tmp_path, "main~1", "main")


def test_a_git_that_hangs_is_one_line(history, monkeypatch):
    """git past its timeout (a hung network filesystem) is a one-line bisect error, not a traceback."""
    repo, shas = history
    real = subprocess.run

    def hangs_on_rev_list(argv, *args, **kwargs):
        if "rev-list" in argv:
            raise subprocess.TimeoutExpired(argv, kwargs["timeout"])
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", hangs_on_rev_list)
    with pytest.raises(BisectError, match="git rev-list in .* timed out after 120 seconds"):
        commit_range(repo, shas[0], "main")

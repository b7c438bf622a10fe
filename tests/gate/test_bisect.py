"""bisect's commit walk and search on a real (tiny) git history, with a stand-in measurement."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from specbench.gate import bisect
from specbench.gate.decision import Status


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


def test_the_range_is_first_parent_after_good_up_to_bad(history):
    repo, shas = history
    good, bad, commits = bisect.commit_range(repo, shas[0], "main")
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
    with pytest.raises(bisect.BisectError, match=words):
        bisect.commit_range(repo, good, bad)


def test_a_folder_that_is_not_a_checkout(tmp_path):
    with pytest.raises(bisect.BisectError, match="not a git checkout"):
        bisect.commit_range(tmp_path, "a", "b")


def test_a_checkout_that_is_not_llama_cpp(tmp_path):
    """Even a one-commit range (whose answer needs no build) is refused: nothing would be measured."""
    git(tmp_path, "init", "-q", "-b", "main")
    for i in range(2):
        (tmp_path / "README").write_text(f"{i}\n")
        git(tmp_path, "add", "README")
        git(tmp_path, "commit", "-qm", f"c{i}")
    with pytest.raises(bisect.BisectError, match="is not a llama.cpp tree"):
        bisect.commit_range(tmp_path, "main~1", "main")


def _measure_with_slow(commits: list[str], slow: int, calls: list):
    def measure(good: str, mid: str, run_dir: Path) -> bisect.StepResult:
        calls.append(mid)
        bad = commits.index(mid) >= slow
        return bisect.StepResult(status=Status.FAIL if bad else Status.PASS, ratio=0.9 if bad else 1.0)

    return measure


@pytest.mark.parametrize("slow", range(1, 9))
def test_finds_the_slow_commit_of_8_in_at_most_3_steps(history, tmp_path, slow):
    repo, shas = history
    state = bisect.start(tmp_path, repo, shas[0], shas[-1], "baseline_tps", 0.05, resume=False)
    assert len(state.commits) == 8
    calls: list[str] = []
    state = bisect.run(tmp_path, state, _measure_with_slow(shas, slow, calls))
    assert state.first_bad.sha == shas[slow]
    assert len(calls) <= 3 and shas[0] not in calls
    assert state.bad_unmeasured == (slow == 8)  # --bad itself, taken as slow: the answer says so


def test_an_undecided_step_stops_and_resume_measures_only_the_rest(history, tmp_path):
    repo, shas = history
    state = bisect.start(tmp_path, repo, shas[0], shas[-1], "spec_tps", 0.05, resume=False)
    first = shas[state.next_index() + 1]

    def undecided(good, mid, run_dir):
        return bisect.StepResult(status=Status.TOO_NOISY, reason="noisy")

    state = bisect.run(tmp_path, state, undecided)
    assert state.first_bad is None and state.bounds()[2].word == "undecided" and len(state.steps) == 1

    with pytest.raises(bisect.BisectError, match="--resume"):
        bisect.start(tmp_path, repo, shas[0], shas[-1], "spec_tps", 0.05, resume=False)
    # an interrupted step (recorded, no decision) is measured again; a decided one is replayed
    state.steps[0].status = Status.FAIL
    state.steps.append(bisect.Step(index=0, commit=shas[1], run_dir="x"))
    bisect.save_state(tmp_path, state)
    calls: list[str] = []
    resumed = bisect.start(tmp_path, repo, shas[0], shas[-1], "spec_tps", 0.05, resume=True)
    resumed = bisect.run(tmp_path, resumed, _measure_with_slow(shas, 2, calls))
    assert first not in calls and resumed.first_bad.sha == shas[2]
    with pytest.raises(bisect.BisectError, match="not of"):
        bisect.start(tmp_path, repo, shas[1], shas[-1], "spec_tps", 0.05, resume=True)


def test_resume_measures_an_undecided_step_again_in_its_own_run_folder(history, tmp_path):
    """A step stopped undecided (say by --budget) goes on when resumed: the same commit, the same run
    folder (its samples kept, more rounds added), and the search continues from its decision."""
    repo, shas = history
    state = bisect.start(tmp_path, repo, shas[0], shas[-1], "spec_tps", 0.05, resume=False)
    seen: list[tuple[str, Path]] = []

    def undecided(good, mid, run_dir):
        seen.append((mid, run_dir))
        return bisect.StepResult(status=Status.TOO_NOISY, reason="noisy; --budget 60 s spent")

    bisect.run(tmp_path, state, undecided)
    resumed = bisect.start(tmp_path, repo, shas[0], shas[-1], "spec_tps", 0.05, resume=True)
    assert resumed.steps == []

    def decided(good, mid, run_dir):
        seen.append((mid, run_dir))
        return _measure_with_slow(shas, 2, [])(good, mid, run_dir)

    resumed = bisect.run(tmp_path, resumed, decided)
    assert seen[1] == seen[0] and resumed.first_bad.sha == shas[2]


def test_resume_refuses_another_config_or_threshold(history, tmp_path):
    """Finished steps are reused only when the rest would be measured and judged as they were."""
    repo, shas = history
    state = bisect.start(tmp_path, repo, shas[0], shas[-1], "spec_tps", 0.05, False, config="cfg-a")
    bisect.save_state(tmp_path, state)
    with pytest.raises(bisect.BisectError, match="another config"):
        bisect.start(tmp_path, repo, shas[0], shas[-1], "spec_tps", 0.05, True, config="cfg-b")
    with pytest.raises(bisect.BisectError, match="--threshold 5.0%, not 2.0%"):
        bisect.start(tmp_path, repo, shas[0], shas[-1], "spec_tps", 0.02, True, config="cfg-a")
    again = bisect.start(tmp_path, repo, shas[0], shas[-1], "spec_tps", 0.05, True, config="cfg-a")
    assert again.config == "cfg-a"


def test_a_step_shows_its_metrics_worst_cell_and_the_output_check_only_when_it_fails():
    from specbench.gate.ab import CellDecision

    def d(metric, status, ratio):
        return CellDecision(cell=f"{metric} cell", metric=metric, unit="t/s", n_pairs=8, ratio=ratio,
                            ci_low=ratio and ratio - 0.01, ci_high=ratio and ratio + 0.01, p_value=None,
                            detectable=None, status=status, reason=status)  # fmt: skip

    passed = bisect.step_result([d("output", Status.PASS, None), d("baseline_tps", Status.PASS, 1.01)])
    assert passed.status == Status.PASS and passed.ratio == 1.01 and passed.reason.startswith("baseline_tps")
    text = bisect.step_result([d("baseline_tps", Status.PASS, 0.99), d("output", Status.FAIL, None)])
    assert text.status == Status.FAIL and text.ratio is None and text.reason.startswith("output")
    slow = bisect.step_result([d("baseline_tps", Status.FAIL, 0.93), d("baseline_tps", Status.FAIL, 0.95)])
    assert slow.ratio == 0.93
    stopped = bisect.step_result([d("baseline_tps", Status.FAIL, 0.5), d("baseline_tps", Status.FAIL, 0.0)])
    assert stopped.ratio == 0.0  # a head at zero t/s is the worst cell, not taken for 1.0

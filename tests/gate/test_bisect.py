"""bisect's search on a real (tiny) git history (tests/gate/conftest.py), with a stand-in measurement."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.gate import bisect
from specbench.gate.decision import Status


def _cell(metric: str, status: Status, ratio: float | None):
    from specbench.gate.ab import CellDecision

    return CellDecision(cell=f"{metric} cell", metric=metric, unit="t/s", n_pairs=8, ratio=ratio,
                        ci_low=ratio and ratio - 0.01, ci_high=ratio and ratio + 0.01, p_value=None,
                        detectable=None, status=status, reason=str(status))  # fmt: skip


def _measured(status: Status, ratio: float | None = None, rounds_end: str = "") -> bisect.Measured:
    return bisect.Measured(decisions=[_cell("baseline_tps", status, ratio)], rounds_end=rounds_end)


def _measure_with_slow(commits: list[str], slow: int, calls: list):
    def measure(good: str, mid: str, run_dir: Path, budget_s=None, open_=None) -> bisect.Measured:
        calls.append(mid)
        bad = commits.index(mid) >= slow
        return _measured(Status.FAIL if bad else Status.PASS, 0.9 if bad else 1.0)

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

    def undecided(good, mid, run_dir, budget_s=None, open_=bisect.OPEN_AGAINST_GOOD):
        return _measured(Status.TOO_NOISY, 0.99)

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

    def undecided(good, mid, run_dir, budget_s=None, open_=bisect.OPEN_AGAINST_GOOD):
        seen.append((mid, run_dir))
        return _measured(Status.TOO_NOISY, 0.99, "--budget 60 s spent")

    bisect.run(tmp_path, state, undecided)
    resumed = bisect.start(tmp_path, repo, shas[0], shas[-1], "spec_tps", 0.05, resume=True)
    assert resumed.steps == []

    def decided(good, mid, run_dir, budget_s=None, open_=bisect.OPEN_AGAINST_GOOD):
        seen.append((mid, run_dir))
        return _measure_with_slow(shas, 2, [])(good, mid, run_dir)

    resumed = bisect.run(tmp_path, resumed, decided)
    # the first run went on against good and then against bad; resumed, against good again
    assert seen[0][1].name.startswith("step-1-") and seen[1][1].name.endswith("-vs-bad")
    assert seen[2] == seen[0] and resumed.first_bad.sha == shas[2]


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
    def m(*cells):
        return bisect.Measured(decisions=[_cell(*c) for c in cells])

    passed = bisect.step_result(m(("output", Status.PASS, None), ("baseline_tps", Status.PASS, 1.01)))
    assert passed.status == Status.PASS and passed.ratio == 1.01 and passed.reason.startswith("baseline_tps")
    text = bisect.step_result(m(("baseline_tps", Status.PASS, 0.99), ("output", Status.FAIL, None)))
    assert text.status == Status.FAIL and text.ratio is None and text.reason.startswith("output")
    slow = bisect.step_result(m(("baseline_tps", Status.FAIL, 0.93), ("baseline_tps", Status.FAIL, 0.95)))
    assert slow.ratio == 0.93
    stopped = bisect.step_result(m(("baseline_tps", Status.FAIL, 0.5), ("baseline_tps", Status.FAIL, 0.0)))
    assert stopped.ratio == 0.0  # a head at zero t/s is the worst cell, not taken for 1.0


def test_faster_than_bad_needs_every_cell_of_the_metric_significantly_faster():
    def m(*cells, rounds_end=""):
        return bisect.Measured(decisions=[_cell(*c) for c in cells], rounds_end=rounds_end)

    up = Status.IMPROVED
    both = bisect.faster_than_bad(
        m(("baseline_tps", up, 1.08), ("baseline_tps", up, 1.06), ("output", Status.PASS, None))
    )
    assert both.status == Status.IMPROVED and both.ratio == 1.06  # the least improved cell shows
    # the output check (which passes with no ratio) does not hide the improvement, nor does it decide
    text = bisect.faster_than_bad(m(("baseline_tps", Status.IMPROVED, 1.08), ("output", Status.FAIL, None)))
    assert text.status == Status.IMPROVED
    one = bisect.faster_than_bad(
        m(("baseline_tps", up, 1.08), ("baseline_tps", Status.PASS, 1.01), rounds_end="--budget 90 s spent")
    )
    assert one.status == Status.TOO_NOISY and one.ratio == 1.01 and one.reason.endswith("--budget 90 s spent")
    slower = bisect.faster_than_bad(m(("baseline_tps", Status.FAIL, 0.9)))  # slower than bad: not good
    assert slower.status == Status.TOO_NOISY
    assert bisect.faster_than_bad(m(("output", Status.PASS, None))).status == Status.TOO_NOISY


def test_a_step_undecided_against_good_is_good_when_faster_than_bad(history, tmp_path):
    """The second run of a step: only an undecided one is measured against bad, with what is left
    of the step's budget; faster than bad moves the search later, else the search stops there."""
    repo, shas = history
    state = bisect.start(tmp_path, repo, shas[0], shas[-1], "baseline_tps", 0.02, resume=False)
    runs: list[tuple[str, str, float | None]] = []
    wants: list[frozenset] = []
    slow = 6

    def measure(base, head, run_dir, budget_s=None, open_=bisect.OPEN_AGAINST_GOOD):
        runs.append((base, head, budget_s))
        wants.append(open_)
        late = shas.index(head) >= slow
        if base == shas[0]:  # against good: a regression fails quickly, no change never passes
            return _measured(Status.FAIL, 0.93) if late else _measured(Status.TOO_NOISY, 1.0, "budget")
        return _measured(Status.TOO_NOISY, 1.0, "budget") if late else _measured(Status.IMPROVED, 1.07)

    state = bisect.run(tmp_path, state, measure, budget_s=180)
    assert state.first_bad.sha == shas[slow]
    first = state.steps[0]
    assert first.side == "good" and first.status == Status.TOO_NOISY and first.against_bad.ratio == 1.07
    assert first.word == "good (faster than --bad)" and first.against_bad.run_dir.endswith("-vs-bad")
    assert runs[0] == (shas[0], shas[4], 90.0) and runs[1][0] == shas[-1] and 90 < runs[1][2] <= 180
    # against bad a pass (no slowdown) is not what it looks for: such a cell gets more rounds
    assert wants[:2] == [bisect.OPEN_AGAINST_GOOD, bisect.OPEN_AGAINST_BAD] and Status.PASS in wants[1]
    # a fail against good needs no run against bad
    assert [(r[0], r[1]) for r in runs] == [
        (shas[0], shas[4]),
        (shas[-1], shas[4]),
        (shas[0], shas[6]),
        (shas[0], shas[5]),
        (shas[-1], shas[5]),
    ]
    assert state.steps[1].against_bad is None
    reloaded = bisect.load_state(tmp_path)
    assert [s.side for s in reloaded.steps] == ["good", "bad", "good"]

    # only bad is slow: the answer is bad, measured (slower than the steps before it), not taken
    only_bad = tmp_path / "only-bad"
    only_bad.mkdir()
    slow = 8
    state = bisect.run(only_bad, bisect.start(only_bad, repo, shas[0], shas[-1], "baseline_tps", 0.02, False),
                       measure, budget_s=180)  # fmt: skip
    assert state.first_bad.sha == shas[-1] and not state.bad_unmeasured

    # undecided both ways: the search stops at that step and says where the change lies
    fresh = tmp_path / "again"
    fresh.mkdir()
    state = bisect.start(fresh, repo, shas[0], shas[-1], "baseline_tps", 0.02, resume=False)
    state = bisect.run(fresh, state, lambda *a: _measured(Status.TOO_NOISY, 1.0, "budget"), budget_s=180)
    assert state.first_bad is None and state.bounds()[2] is state.steps[0]
    assert state.steps[0].side == "undecided" and state.steps[0].against_bad.status == Status.TOO_NOISY


def test_no_budget_left_after_the_run_against_good_means_no_run_against_bad(history, tmp_path):
    repo, shas = history
    state = bisect.start(tmp_path, repo, shas[0], shas[-1], "baseline_tps", 0.02, resume=False)
    runs = []

    def slow_measure(base, head, run_dir, budget_s=None, open_=bisect.OPEN_AGAINST_GOOD):
        runs.append(base)
        import time

        time.sleep(0.05)
        return _measured(Status.TOO_NOISY, 1.0, "budget")

    state = bisect.run(tmp_path, state, slow_measure, budget_s=0.01)
    assert runs == [shas[0]] and state.steps[0].against_bad is None and state.steps[0].side == "undecided"

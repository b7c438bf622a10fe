"""Tune's choice (issue 58): the rule every command calls best by (``analysis.figures.pick_best``),
on stand-in candidates; and tune's baseline against the same baseline in this machine's other runs
(history)."""

import pytest

from specbench.analysis.figures import Standing
from specbench.tune.candidates import Candidate, Setting
from specbench.tune.search import choose, record_and_compare
from tests.helpers.runs import make_run, run_count


def _c(g: int, speedup: float, low: float | None, high: float | None, n: int) -> Candidate:
    return Candidate(Setting(g, 0, 0.0, 0, 0), speedup=speedup, speedup_ci_low=low, speedup_ci_high=high, n=n)


def test_a_decided_candidate_wins_over_a_wider_faster_one():
    wide = _c(8, 2.6, 0.01, 3000.0, 6)  # the survivor with the most samples, interval no figure
    decided = _c(4, 1.3, 1.2, 1.4, 4)
    assert choose([wide, decided]) == (decided, Standing.DECIDED)


def test_with_none_decided_the_last_rounds_survivor_is_named_undecided():
    survivor = _c(8, 1.5, 0.5, 4.0, 6)
    lucky = _c(16, 1.9, None, None, 3)  # one round: no interval
    assert choose([survivor, lucky]) == (survivor, Standing.UNDECIDED)


SPEC = {8: [60.0, 60.0]}


def test_no_other_run_of_the_baseline_is_no_drift_and_the_run_is_recorded(tmp_path):
    db = tmp_path / "h.sqlite"
    tuned = make_run(tmp_path, "tune1", [45.0, 47.0], SPEC)
    assert record_and_compare(tuned, 1.3, db) is None
    assert run_count(db) == 1
    assert record_and_compare(tuned, 1.3, db) is None, "tune's own run, recorded again, is not another run"


def test_other_levels_of_the_same_baseline_give_the_speedup_at_those_levels(tmp_path):
    db = tmp_path / "h.sqlite"
    for run_id, level in (("sweep1", 60.0), ("sweep2", 90.0)):
        make_run(tmp_path, run_id, [level, level], SPEC)
        record_and_compare(tmp_path / run_id, None, db)
    drift = record_and_compare(make_run(tmp_path, "tune3", [45.0, 45.0], SPEC), 1.2, db)
    assert drift is not None and drift.runs == 2
    assert (drift.low_tps, drift.high_tps, drift.tune_tps) == pytest.approx((60.0, 90.0, 45.0))
    # spec t/s held: the speedup scales with tune's baseline over the other level
    assert drift.speedup_low == pytest.approx(1.2 * 45 / 90) and drift.speedup_high == pytest.approx(
        1.2 * 45 / 60
    )
    assert drift.outside(1.1, 1.3), "0.60x at the higher level is below tune's interval"
    assert not drift.outside(0.5, 1.0)
    assert drift.outside(None, None), "no interval of its own holds nothing"


def test_another_series_is_not_the_same_baseline(tmp_path):
    db = tmp_path / "h.sqlite"
    record_and_compare(make_run(tmp_path, "sweep1", [90.0], SPEC, threads=1), None, db)  # other threads
    record_and_compare(
        make_run(tmp_path, "sweep2", [90.0], SPEC, prompts=("p1", "p2")), None, db
    )  # other prompts
    record_and_compare(make_run(tmp_path, "sweep3", [90.0], SPEC, cpu="Other CPU"), None, db)  # other machine
    record_and_compare(make_run(tmp_path, "sweep5", [90.0], SPEC, commit="beef"), None, db)  # other llama.cpp
    assert record_and_compare(make_run(tmp_path, "tune4", [45.0], SPEC), 1.2, db) is None


def test_the_widened_range_holds_the_interval_and_the_other_levels(tmp_path):
    db = tmp_path / "h.sqlite"
    record_and_compare(make_run(tmp_path, "sweep1", [90.0, 90.0], SPEC), None, db)
    drift = record_and_compare(make_run(tmp_path, "tune2", [45.0, 45.0], SPEC), 1.2, db)
    assert drift.widened(1.1, 1.3) == (pytest.approx(0.6), 1.3)
    assert drift.widened(None, None) == (pytest.approx(0.6), pytest.approx(0.6))

"""The sentinel's drift verdict with pairs: a move that fell between pairs is cancelled by them (a
note), one that fell inside pairs biases what they say (a WARNING). Judged on recorded readings:
the shapes of the quiet-VM runs of docs/sentinel.md (2026-11-25, 4 readings in about 220 s) and
of the loaded-VM warning there (41.2 to 22.3 t/s)."""

from __future__ import annotations

import math

import pytest

from specbench.machine.speed import SpeedReading, SpeedRecord, judge_speed, within_pair


def _record(points: list[tuple[int, float]], pair_s: float | None) -> SpeedRecord:
    """(seconds after the start, t/s) per reading; each took 2 s, as the quiet VM's did."""
    readings = [
        SpeedReading(phase="during", at=f"2026-11-25T15:{t // 60:02d}:{t % 60:02d}+00:00", tps=v, wall_s=2.0)
        for t, v in points
    ]
    return SpeedRecord(reference="smol_f32 alone", readings=readings, pair_s=pair_s)


QUIET_RUN_2 = [(0, 45.5), (70, 60.0), (140, 39.0), (215, 52.0)]  # docs/sentinel.md: 39.0-60.0 t/s, +31.9%


def test_a_drift_between_pairs_is_a_note_not_a_warning():
    """ab's pairs of configs/ci.yaml take about 4 s (two 64-token samples back to back): the
    steepest change, 60 to 39 t/s in 70 s, moves the speed 2.5% within a pair, under 3%."""
    record = _record(QUIET_RUN_2, pair_s=4.0)
    assert judge_speed(record, 0.03) == [] and record.warnings == []
    (note,) = record.notes
    assert note.startswith(
        "machine speed moved by +32% during the run (from 45.5 to 60.0 t/s), between pairs"
    )
    assert "at most 2.5% within a pair (4 s)" in note
    assert record.moved == pytest.approx(60.0 / 45.5 - 1)  # still recorded (history's speed_moved)


def test_the_same_drift_inside_long_pairs_is_a_warning():
    """The server runner's pairs span its servers' windows (here a minute): the same readings then
    move a pair's two sides apart by far more than the precision."""
    record = _record(QUIET_RUN_2, pair_s=60.0)
    (warning,) = judge_speed(record, 0.03)
    assert warning.startswith("machine speed moved by +32% during the run (from 45.5 to 60.0 t/s), up to ")
    assert warning.endswith("within a pair (60 s): inside pairs") and record.notes == []


def test_a_fast_step_is_a_warning_even_for_short_pairs():
    """The loaded VM's -46% (41.2 to 22.3 t/s) between two readings 30 s apart: 8% within a 4 s pair."""
    record = _record([(0, 41.2), (30, 22.3)], pair_s=4.0)
    (warning,) = judge_speed(record, 0.03)
    assert "-46%" in warning and "inside pairs" in warning
    assert within_pair(record) == pytest.approx(math.expm1(math.log(41.2 / 22.3) / 30 * 4))


def test_without_pairs_every_move_beyond_the_precision_warns_as_before():
    record = _record(QUIET_RUN_2, pair_s=None)
    assert judge_speed(record, 0.03) == ["machine speed moved by +32% during the run (from 45.5 to 60.0 t/s)"]
    assert within_pair(record) is None and record.notes == []


def test_a_move_within_the_precision_is_neither():
    record = _record([(0, 40.0), (60, 40.8)], pair_s=60.0)
    assert judge_speed(record, 0.03) == [] and record.notes == []


def test_the_drift_within_a_pair_is_spread_over_the_time_between_readings():
    record = _record([(0, 40.0), (100, 44.0)], pair_s=10.0)
    assert within_pair(record) == pytest.approx(1.1**0.1 - 1)

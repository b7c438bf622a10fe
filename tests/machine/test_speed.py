"""The speed sentinel's verdict: a move of the reference beyond the run's precision is a warning
naming by how much and from what to what; a steady series, or a move within precision, is none."""

from __future__ import annotations

from specbench.machine.speed import BaselineWindows, SpeedReading, SpeedRecord, judge_speed, largest_move


def _record(*tps: float | None) -> SpeedRecord:
    return SpeedRecord(
        reference="t alone",
        readings=[
            SpeedReading(phase="during", at=f"2026-01-01T00:0{i}:00+00:00", tps=v, wall_s=1.0)
            for i, v in enumerate(tps)
        ],
    )


def test_a_steady_series_does_not_warn():
    record = _record(40.0, 40.4, 39.7, 40.1)
    assert judge_speed(record, 0.03) == []
    assert record.moved is not None and abs(record.moved) < 0.03 and record.precision == 0.03


def test_a_slow_phase_in_the_middle_warns_with_the_move_and_both_speeds():
    record = _record(40.0, 30.0, 39.8)  # over by the end: still a move during the run
    (warning,) = judge_speed(record, 0.03)
    assert warning == "machine speed moved by -25% during the run (from 40.0 to 30.0 t/s)"
    assert record.moved == -0.25 and record.warnings == [warning]


def test_a_failed_reading_is_left_out_and_one_reading_compares_nothing():
    assert judge_speed(_record(40.0, None), 0.03) == []
    assert largest_move([40.0]) is None


def test_the_server_bracket_moves_are_judged_alike_and_the_largest_comes_first():
    record = _record(40.0, 39.0)
    record.windows = [
        BaselineWindows(group="f32 parallel=1", before_tps=20.0, after_tps=20.2),
        BaselineWindows(group="f32 parallel=2", before_tps=20.0, after_tps=30.0),
    ]
    warnings = judge_speed(record, 0.03)
    assert warnings == [
        "machine speed moved by +50% between the baseline windows of f32 parallel=2 (from 20.0 to 30.0 t/s)"
    ]
    assert record.moved == 0.5


def test_the_cost_is_the_readings_wall_time():
    record = _record(40.0, 41.0)
    assert record.cost_s() == 2.0
    assert "2 readings of t alone, 40.0-41.0 t/s; they took 2.0 s = 2.0% of the run" in record.describe(100)


def test_a_sentinel_turned_off_says_so_where_a_run_without_readings_says_nothing():
    assert SpeedRecord().describe() is None  # no baseline to read: nothing to say
    off = SpeedRecord(off=True)
    assert off.describe().startswith("speed sentinel off (sentinel: false): the machine's own speed was not")
    assert judge_speed(off, 0.03) == [] and off.moved is None


def test_readings_too_short_to_time_are_a_note_not_a_move():
    """On an H200 the 64-token reference decoded for ~30 ms and two readings of a steady machine
    differed by 23%: warned as 'machine speed moved'. Readings under SHORT_READING_S are not judged
    (a note says why); the same move over readings of a second still warns."""
    from specbench.machine.speed import SHORT_READING_S

    def record(span: float) -> SpeedRecord:
        return SpeedRecord(
            readings=[
                SpeedReading(phase="before", at="2026-11-27T20:00:00+00:00", tps=2251.1, span_s=span),
                SpeedReading(phase="after", at="2026-11-27T20:01:00+00:00", tps=1738.5, span_s=span),
            ]
        )

    short = record(SHORT_READING_S / 3)
    assert judge_speed(short, 0.03) == [] and short.moved is None
    assert any("-23%" in n and "too short" in n for n in short.notes)
    long = record(1.0)
    assert judge_speed(long, 0.03) and "-23%" in long.warnings[0] and not long.notes

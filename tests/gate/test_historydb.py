"""The history database's storage: a run recorded once however often it is recorded, a foreign or
older database refused or migrated."""

import sqlite3

import pytest

from specbench.gate.history import load_history
from specbench.gate.historydb import HistoryError, record_run
from tests.helpers.runs import BASE, SPEC, make_run, run_count, with_speed


def test_record_is_idempotent_per_run(tmp_path):
    db = tmp_path / "h.sqlite"
    run = make_run(tmp_path, "run1", BASE, SPEC, prompts=("p1", "p2"))
    rows = record_run(run, db)
    # 4 metrics; baseline_tps has 1 cell, the others 2 (draft_max 4 and 8); each over 2 prompts.
    assert rows == (1 + 2 + 2 + 2) * 2
    assert record_run(run, db) == rows
    assert run_count(db) == 1
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM cells").fetchone()[0] == rows


def test_a_foreign_database_is_refused(tmp_path):
    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (x TEXT)")
    with pytest.raises(HistoryError, match="not a specbench history database"):
        record_run(make_run(tmp_path, "run1", BASE, SPEC), db)


def test_recording_a_run_that_measured_nothing_keeps_its_points(tmp_path):
    """Re-recording a run whose samples are gone (or not yet there) must not wipe its points."""
    db = tmp_path / "h.sqlite"
    run = make_run(tmp_path, "run1", BASE, SPEC)
    rows = record_run(run, db)
    (run / "samples.jsonl").write_text("")
    assert record_run(run, db) == 0
    assert run_count(db) == 1 and len(load_history(db, "spec_tps")) == 2 and rows > 0
    # only invalid samples: no value either
    failed = make_run(tmp_path / "f", "run1", [], SPEC, status="failed")
    assert record_run(failed, db) == 0 and len(load_history(db, "spec_tps")) == 2


def test_a_version_1_database_is_read_as_is_and_migrated_on_write(tmp_path):
    db = tmp_path / "h.sqlite"
    with sqlite3.connect(db) as conn:  # the schema before the sentinel's columns
        conn.executescript(
            "CREATE TABLE runs (run_key TEXT PRIMARY KEY, run_id TEXT NOT NULL, started_at TEXT, recorded_at "
            "TEXT, run_dir TEXT, llama_cpp_commit TEXT, machine TEXT, drivers TEXT, threads TEXT, "
            "specbench_version TEXT); CREATE TABLE cells (run_key TEXT NOT NULL REFERENCES runs(run_key) "
            "ON DELETE CASCADE, metric TEXT NOT NULL, cell TEXT NOT NULL, label TEXT NOT NULL, prompts TEXT "
            "NOT NULL, prompt_id TEXT NOT NULL, repetitions TEXT NOT NULL, vals TEXT NOT NULL, PRIMARY KEY "
            "(run_key, metric, cell, prompt_id)); PRAGMA user_version = 1;"
        )
        conn.execute("INSERT INTO runs (run_key, run_id, machine) VALUES ('old@', 'old', 'm')")
        conn.execute("INSERT INTO cells VALUES ('old@', 'spec_tps', 'm|{}|p', 'x', 'p', 'p', '[0]', '[5.0]')")
    (point,) = load_history(db, "spec_tps")  # viewing never writes
    assert point.speed_moved is None and sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == 1
    record_run(with_speed(make_run(tmp_path, "new", BASE, SPEC), -0.2, True), db)
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == 2
    assert {p.run_id: p.speed_warned for p in load_history(db, "spec_tps")}["new"] is True

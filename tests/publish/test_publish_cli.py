"""`specbench publish` on bad input, read-only history, --serve, and the regression flags (no browser)."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import subprocess
import sys
import urllib.request

from specbench.gate.historydb import record_run
from specbench.publish.series import Point, Series, flag_changes, load_series
from tests.fixtures.build import assert_one_line_error
from tests.helpers.cli import specbench
from tests.helpers.runs import BASE, SPEC, make_run


def _history(tmp_path):
    db = tmp_path / "results" / "history.sqlite"
    runs = tmp_path / "results"
    record_run(make_run(runs, "run1", BASE, SPEC, commit="aaaa"), db)
    slower = {k: [x * 0.7 for x in v] for k, v in SPEC.items()}
    record_run(make_run(runs, "run2", BASE, slower, commit="bbbb"), db)
    return db


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def test_publish_reads_history_without_writing_it(tmp_path):
    db = _history(tmp_path)
    before = _digest(db)
    r = specbench("publish", "--db", db, "--out", tmp_path / "site", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert re.search(r"site: .*index\.html \(\d+ pages, 2 runs", r.stdout)
    assert _digest(db) == before
    assert not list(db.parent.glob("history.sqlite-*"))  # no journal left behind either
    # publishing again replaces the site it wrote
    again = specbench("publish", "--db", db, "--out", tmp_path / "site", cwd=tmp_path)
    assert again.returncode == 0, again.stderr


def test_an_unreadable_run_folder_is_left_out_with_a_note(tmp_path):
    db = _history(tmp_path)
    newer = tmp_path / "results" / "from-the-future"
    newer.mkdir()
    (newer / "manifest.json").write_text('{"format_version": 99, "run_id": "x", "specbench_version": "9.0"}')
    r = specbench("publish", "--db", db, "--out", tmp_path / "site", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert re.search(r"note: left out .*from-the-future: .*upgrade specbench", r.stderr)


def test_a_missing_history_gives_a_site_that_says_so(tmp_path):
    r = specbench("publish", "--db", tmp_path / "none.sqlite", "--out", tmp_path / "site", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "no run recorded" in r.stderr
    assert "No run is recorded in" in (tmp_path / "site" / "index.html").read_text()
    assert not (tmp_path / "none.sqlite").exists()


def test_bad_input_is_one_line(tmp_path):
    db = _history(tmp_path)
    (tmp_path / "afile").write_text("x")
    r = specbench("publish", "--db", db, "--out", tmp_path / "afile", cwd=tmp_path)
    assert r.returncode == 2
    assert_one_line_error(r, "is a file", "give a folder")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    r = specbench("publish", "--db", db, "--out", tmp_path / "other", cwd=tmp_path)
    assert_one_line_error(r, "other files in it")
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"
    (tmp_path / "empty.sqlite").write_text("")
    r = specbench("publish", "--db", tmp_path / "empty.sqlite", "--out", tmp_path / "s", cwd=tmp_path)
    assert_one_line_error(r, "not a specbench history database")
    r = specbench(
        "publish", "--db", db, "--runs", tmp_path / "nowhere", "--out", tmp_path / "s", cwd=tmp_path
    )
    assert_one_line_error(r, "--runs", "no such folder")


def test_a_history_from_a_newer_specbench_is_refused(tmp_path):
    db = _history(tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = _digest(db)
    r = specbench("publish", "--db", db, "--out", tmp_path / "site", cwd=tmp_path)
    assert r.returncode != 0
    assert_one_line_error(r, "newer specbench", "upgrade specbench")
    assert _digest(db) == before and not (tmp_path / "site").exists()


def test_serve_answers_on_localhost(tmp_path):
    db = _history(tmp_path)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "specbench",
            "publish",
            "--db",
            str(db),
            "--out",
            str(tmp_path / "site"),
            "--serve",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        url = None
        for line in proc.stdout:
            if line.startswith("serving "):
                url = line.split()[1]
                break
        assert url is not None and url.startswith("http://127.0.0.1:")
        page = urllib.request.urlopen(url + "index.html", timeout=30).read().decode()
        assert "Speculative decoding results" in page
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_gate_rule_flags_a_drop_beyond_the_noise_and_not_the_noise(tmp_path):
    db = _history(tmp_path)
    spec = [s for s in load_series([db]) if s.metric == "spec_tps"]
    assert spec and all(s.points[1].flag == "regression" for s in spec)  # 30% slower, 3 reps of 1% noise
    assert all(s.points[0].flag is None for s in spec)
    base = [s for s in load_series([db]) if s.metric == "baseline_tps"]
    assert base and all(p.flag is None for s in base for p in s.points)  # the same numbers: nothing flagged

    def point(i, reps):
        return Point(
            run_key=f"r{i}",
            run_id=f"r{i}",
            started_at=f"2026-01-0{i + 1}",
            commit="c",
            run_dir=None,
            mean=sum(reps) / len(reps),
            low=None,
            high=None,
            n_reps=len(reps),
            reps=reps,
        )

    noisy = Series(
        machine="m",
        metric="spec_tps",
        label="x",
        cell_id="x",
        pair="x",
        method="draft",
        setting="",
        prompts="p",
        generation="",
        key={},
        points=[point(0, [100, 80, 120]), point(1, [90, 70, 110])],
    )
    flag_changes(noisy)  # 10% lower, but within the noise of 3 repetitions: not flagged
    assert noisy.points[1].flag is None

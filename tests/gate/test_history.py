"""The history database: idempotent per run, one series per cell, plotted with matplotlib."""

import json
import math
import sqlite3

import pytest

from specbench.gate.history import load_history, series_of
from specbench.gate.historydb import record_run
from specbench.gate.historyplot import plot_history
from tests.helpers.runs import BASE, SPEC, make_run, run_count, with_speed


def test_series_over_runs_mean_over_prompts_per_repetition(tmp_path):
    db = tmp_path / "h.sqlite"
    record_run(make_run(tmp_path, "run1", BASE, SPEC, prompts=("p1", "p2"), commit="aaaa"), db)
    slower = {k: [x * 0.5 for x in v] for k, v in SPEC.items()}
    record_run(make_run(tmp_path, "run2", BASE, slower, prompts=("p1", "p2"), commit="bbbb", threads=1), db)
    points = load_history(db, "spec_tps", cell="draft_max=8")
    assert [(p.run_id, p.commit, p.threads) for p in points] == [("run1", "aaaa", "2"), ("run2", "bbbb", "1")]
    # make_run scales prompt i by 1 + 0.1 i: per repetition the mean over prompts is 1.05 x the value,
    # and the figure (issue 58: averaged as a speedup) the geometric mean of the geometric ones.
    per_rep = [x * 1.05 for x in SPEC[8]]
    mean = sum(per_rep) / 3
    figure = math.exp(sum(math.log(x * math.sqrt(1.1)) for x in SPEC[8]) / 3)
    assert points[0].mean == pytest.approx(figure)
    assert points[0].sd == pytest.approx((sum((x - mean) ** 2 for x in per_rep) / 2) ** 0.5)
    assert points[1].mean == pytest.approx(figure * 0.5)
    assert (points[0].n_reps, points[0].n_prompts) == (3, 2)
    # Another prompt set is another series, not a point of this one.
    record_run(make_run(tmp_path, "run3", BASE, SPEC, prompts=("p1",)), db)
    series = {(p.label, p.prompts, p.run_id) for p in load_history(db, "spec_tps", cell="draft_max=8")}
    label = "smol draft draft_max=8"
    assert series == {(label, "p1,p2", "run1"), (label, "p1,p2", "run2"), (label, "p1", "run3")}


def test_plot_and_empty_history(tmp_path):
    db = tmp_path / "h.sqlite"
    assert load_history(db) == [] and run_count(db) == 0
    record_run(make_run(tmp_path, "run1", BASE, SPEC), db)
    record_run(make_run(tmp_path, "run2", BASE, SPEC), db)
    out = plot_history(load_history(db, "baseline_tps"), tmp_path / "plots" / "h.png", "baseline_tps")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000


def test_a_reused_run_folder_name_is_a_new_point(tmp_path):
    """CI writes every run to results/ci: same run id, different start time, two points."""
    db = tmp_path / "h.sqlite"
    record_run(make_run(tmp_path / "first", "ci", BASE, SPEC), db)
    record_run(make_run(tmp_path / "second", "ci", BASE, {8: [x * 0.5 for x in SPEC[8]]}), db)
    assert run_count(db) == 1  # same id and same start time in make_run: the second replaced the first
    later = make_run(tmp_path / "third", "ci", BASE, SPEC)
    manifest = json.loads((later / "manifest.json").read_text())
    (later / "manifest.json").write_text(json.dumps({**manifest, "started_at": "2026-02-01T00:00:00+00:00"}))
    record_run(later, db)
    points = load_history(db, "spec_tps", cell="draft_max=8")
    assert run_count(db) == 2 and [p.run_id for p in points] == ["ci", "ci"]
    assert points[0].mean == pytest.approx(points[1].mean * 0.5)


def test_runs_compare_would_refuse_are_separate_series(tmp_path):
    """Another n_predict is another measurement (compare refuses it): its own series, not a point."""
    db = tmp_path / "h.sqlite"
    record_run(make_run(tmp_path, "run1", BASE, SPEC, n_predict=48), db)
    record_run(make_run(tmp_path, "run2", BASE, SPEC, n_predict=32), db)
    points = load_history(db, "spec_tps", cell="draft_max=8")
    series = {(p.label, p.generation, p.prompts): p.run_id for p in points}
    assert len(series) == 2 and sorted(series.values()) == ["run1", "run2"]
    assert {p.generation.split(",")[0] for p in points} == {"n_predict 48", "n_predict 32"}


def test_runner_and_parallel_are_separate_series(tmp_path):
    """Issue 24: `history --cell draft_max=4` mixed server and process runs and both `parallel`
    values in one series."""
    db = tmp_path / "h.sqlite"
    record_run(make_run(tmp_path, "run1", BASE, SPEC), db)
    record_run(make_run(tmp_path, "run2", BASE, SPEC, runner="server"), db)
    record_run(make_run(tmp_path, "run3", BASE, SPEC, runner="server", parallel=2), db)
    record_run(make_run(tmp_path, "run4", BASE, SPEC, runner="server", parallel=2), db)
    points = load_history(db, "spec_tps", cell="draft_max=4")
    series = {}
    for p in points:
        series.setdefault(series_of(p), []).append(p.run_id)
    assert sorted(series.values()) == [["run1"], ["run2"], ["run3", "run4"]]
    assert {(p.runner, p.parallel) for p in points} == {("process", 1), ("server", 1), ("server", 2)}
    plot = plot_history(points, tmp_path / "h.png", "spec_tps")
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_same_span_baselines_start_a_series_of_their_own(tmp_path):
    """baseline_tps and speedup of format-2 runs (same span as the speculative side) are never one
    series with earlier runs' decode-only ones; spec_tps, unchanged, continues its series."""
    db = tmp_path / "h.sqlite"
    record_run(make_run(tmp_path, "run1", BASE, SPEC), db)
    record_run(make_run(tmp_path, "run2", BASE, SPEC, format_version=2), db)
    for metric in ("baseline_tps", "speedup"):
        points = load_history(db, metric)
        by_series = {}
        for p in points:
            by_series.setdefault(series_of(p), []).append(p.run_id)
        assert all(len(ids) == 1 for ids in by_series.values()), metric  # one run per series
        assert sorted(ids[0] for ids in by_series.values()).count("run2") == len(by_series) // 2
        assert {p.timing for p in points if p.run_id == "run2"} == {"same-span"}
    spec = load_history(db, "spec_tps", cell="draft_max=8")
    assert [p.run_id for p in spec] == ["run1", "run2"] and len({series_of(p) for p in spec}) == 1


def test_runs_whose_machine_speed_moved_are_marked(tmp_path):
    db = tmp_path / "h.sqlite"
    record_run(with_speed(make_run(tmp_path / "a", "quiet", BASE, SPEC), 0.01, False), db)
    slow = make_run(tmp_path / "b", "slow", BASE, SPEC)
    manifest = json.loads((slow / "manifest.json").read_text())
    (slow / "manifest.json").write_text(json.dumps({**manifest, "started_at": "2026-02-01T00:00:00+00:00"}))
    record_run(with_speed(slow, -0.25, True), db)
    record_run(make_run(tmp_path / "c", "old", BASE, SPEC, commit="cccc"), db)  # before the sentinel
    marks = {p.run_id: (p.speed_moved, p.speed_warned) for p in load_history(db, "baseline_tps")}
    assert marks == {"quiet": (0.01, False), "slow": (-0.25, True), "old": (None, None)}
    with sqlite3.connect(db) as conn:  # the column a results site reads
        rows = dict(conn.execute("SELECT run_id, speed_warned FROM runs").fetchall())
    assert rows == {"quiet": 0, "slow": 1, "old": None}


def test_the_plan_estimate_is_history_where_known_else_sizes_and_its_duration_reads_as_one(tmp_path):
    from specbench.gate.history import duration_text, plan_estimate
    from specbench.plan.shards import guess_s
    from tests.helpers.fakeruns import inv

    invs = [inv("nodraft", role="baseline"), inv("spec")]
    seconds, known = plan_estimate("cpu", tmp_path / "history.sqlite").total(invs)
    assert known == 0 and seconds == sum(guess_s(i) for i in invs)
    assert [duration_text(s) for s in (45, 720, 3 * 3600 + 720)] == ["45 s", "12 min", "3.2 h"]

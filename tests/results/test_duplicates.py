"""A sample's identity (cell, prompt, repetition, role) is unique in a run: a repeated line is
counted once, with a note, by report, compare, history, baseline files and --resume."""

from __future__ import annotations

import json
import math

from specbench.analysis.report import build_report
from specbench.gate.baseline import load_side, save_baseline
from specbench.gate.history import load_history
from specbench.gate.historydb import record_run
from specbench.results.manifestfile import read_run
from specbench.results.samplelog import load_samples
from tests.helpers.cli import specbench
from tests.helpers.runs import BASE, SPEC, make_run


def duplicate_lines(run_dir, *which: int) -> None:
    """Append copies of the given lines (0-based) of samples.jsonl, the way a botched merge would;
    the copies carry other numbers, as a rerun of the same sample would."""
    path = run_dir / "samples.jsonl"
    lines = path.read_text().splitlines()
    copies = []
    for i in which:
        data = json.loads(lines[i])
        data["tps"] = data["tps"] * 10 if data.get("tps") else data.get("tps")
        copies.append(json.dumps(data))
    path.write_text("\n".join([*lines, *copies]) + "\n")


def test_a_duplicate_counts_once_in_report_history_and_baselines(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBENCH_RESULTS", str(tmp_path / "results"))
    run = make_run(tmp_path, "run1", BASE, SPEC)
    clean = build_report([run]).shown(False)
    duplicate_lines(run, 0, 1)  # the first baseline and the first speculative sample, again
    warnings = []
    assert len(load_samples(run, warnings)) == len(load_samples(make_run(tmp_path / "c", "run1", BASE, SPEC)))
    assert len(warnings) == 1 and "2 duplicate samples were dropped" in warnings[0]
    rep = build_report([run])
    rows = rep.shown(False)
    assert [(r.n, r.baseline_n, r.spec_tps) for r in rows] == [(r.n, r.baseline_n, r.spec_tps) for r in clean]
    assert rows[0].baseline_n == len(BASE)  # 3 repetitions, not 4
    assert any("duplicate" in note for note in rep.notes)
    # history: the same values as the clean run
    db = tmp_path / "h.sqlite"
    record_run(run, db)
    geometric = math.exp(sum(map(math.log, BASE)) / 3)  # a t/s is averaged as a speedup (issue 58)
    assert {round(p.mean, 6) for p in load_history(db, "baseline_tps")} == {round(geometric, 6)}
    # a baseline file with a repeated sample (hand-merged) reads once too, with the note
    saved = save_baseline(run, "b")  # saving says what it dropped, as report and compare do
    assert any("2 duplicate samples were dropped" in n for n in saved.notes)
    path = saved.path
    data = json.loads(path.read_text())
    data["samples"].append(data["samples"][0])
    path.write_text(json.dumps(data))
    side = load_side(str(path))
    assert len(side.samples) == len(data["samples"]) - 1 and "duplicate sample was dropped" in side.notes[0]


def test_compare_says_it_dropped_duplicates_and_counts_each_once(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC)
    b = make_run(tmp_path, "run2", BASE, SPEC)
    duplicate_lines(b, 1)
    proc = specbench("compare", a, b, "--format", "json", cwd=tmp_path)
    assert "note: " in proc.stderr and "1 duplicate sample was dropped" in proc.stderr, proc.stderr
    cells = [c for m in json.loads(proc.stdout)["metrics"] for c in m["cells"] if c["decision"]]
    assert cells and all(c["decision"]["n_cur"] == c["decision"]["n_base"] for c in cells)


def test_resume_skips_what_is_recorded_and_counts_duplicates_once(tmp_path):
    """--resume rebuilds what is done from the samples: a duplicate neither runs again nor counts twice."""
    from specbench.builder.toolkit import detect_backend
    from specbench.execute.runner import execute
    from specbench.machine.envinfo import collect
    from tests.helpers.fakeruns import inv, manifest, process

    plan = [inv("nodraft", prompt_id="a"), inv("nodraft", prompt_id="b")]
    run_dir = tmp_path / "run"
    man = manifest(run_dir, collect(detect_backend))
    execute(process(plan[:1]), run_dir, man)
    line = (run_dir / "samples.jsonl").read_text()
    (run_dir / "samples.jsonl").write_text(line * 2)
    result = execute(process(plan), run_dir, man, resume=True)
    assert result.n_new == 1 and [s.prompt_id for s in result.samples] == ["a", "b"]
    assert [s.prompt_id for s in read_run(run_dir, manifest_required=False).samples] == ["a", "b"]


def test_history_add_says_it_dropped_duplicates(tmp_path):
    run = make_run(tmp_path, "run1", BASE, SPEC)
    duplicate_lines(run, 0)
    proc = specbench("history", "--add", run, "--db", tmp_path / "h.sqlite", cwd=tmp_path)
    assert (
        proc.returncode == 0 and "note: " in proc.stderr and "1 duplicate sample was dropped" in proc.stderr
    )

"""Baseline files: compact, committed, and compared exactly like the run they were saved from."""

import json
from pathlib import Path

import pytest

from specbench.gate.baseline import InputError, load_run, load_side, save_baseline
from specbench.gate.compare import compare
from tests.helpers.runs import BASE, SPEC, make_run


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A results folder of its own (SPECBENCH_RESULTS is how specbench finds results/)."""
    monkeypatch.setenv("SPECBENCH_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


def test_save_is_compact_and_compares_like_the_run(tmp_path, results):
    run = make_run(tmp_path, "run1", BASE, SPEC, prompts=("p1", "p2"))
    path = save_baseline(run, "ci-test").path
    assert path == results / "baselines" / "ci-test.json"
    data = json.loads(path.read_text())
    assert data["format"] == "specbench-baseline" and data["facts"]["models"]["smol-f32"] == "a" * 64
    assert data["facts"]["machine"]["cpu_model"] == "Test CPU 2-core"
    assert len(data["samples"]) == len(load_run(run).samples)
    assert all("cmd" not in s and "metrics" not in s for s in data["samples"])
    # One sample per line, so a committed baseline diffs line by line.
    assert sum(1 for line in path.read_text().splitlines() if '"role"' in line) == len(data["samples"])

    current = make_run(
        tmp_path, "run2", BASE, {4: SPEC[4], 8: [x * 0.8 for x in SPEC[8]]}, prompts=("p1", "p2")
    )
    by_name = compare(load_side("ci-test"), load_side(str(current)))
    by_run = compare(load_side(str(run)), load_side(str(current)))
    assert by_name.exit_code == by_run.exit_code == 1
    assert [c.model_dump() for m in by_name.metrics for c in m.cells] == [
        c.model_dump() for m in by_run.metrics for c in m.cells
    ]
    assert load_side(str(path)).kind == "baseline"


def test_existing_baseline_needs_force(tmp_path, results):
    run = make_run(tmp_path, "run1", BASE, SPEC)
    save_baseline(run, "ci-test")
    with pytest.raises(InputError, match="--force"):
        save_baseline(run, "ci-test")
    assert save_baseline(run, "ci-test", force=True).path.is_file()


def test_unknown_side_names_saved_baselines(tmp_path, results):
    save_baseline(make_run(tmp_path, "run1", BASE, SPEC), "ci-m2")
    with pytest.raises(InputError, match="saved baselines: ci-m2") as exc:
        load_side("ci-rtx4090")
    assert exc.value.exit_code == 2


def test_bad_inputs(tmp_path, results):
    run = make_run(tmp_path, "run1", BASE, SPEC)
    with pytest.raises(InputError, match="--name"):
        save_baseline(run, "../escape")
    empty = make_run(tmp_path, "run2", [], {}, prompts=())
    (empty / "samples.jsonl").write_text("")
    with pytest.raises(InputError, match="no valid baseline or speculative sample"):
        save_baseline(empty, "empty")
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    with pytest.raises(InputError, match="is interrupted, not complete"):
        save_baseline(run, "half")
    not_baseline = tmp_path / "x.json"
    not_baseline.write_text('{"hello": 1}')
    with pytest.raises(InputError, match="not a specbench baseline"):
        load_side(str(not_baseline))
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\x00\xff\xfe\x01binary")
    with pytest.raises(InputError, match="not a specbench baseline .not UTF-8"):
        load_side(str(binary))


def test_list_names_an_unreadable_file_and_lists_the_rest(tmp_path, results):
    from specbench.gate.baseline import baselines_dir, list_baselines

    save_baseline(make_run(tmp_path, "run1", BASE, SPEC), "good.json")  # .json is not doubled
    (baselines_dir() / "binb.json").write_bytes(b"\x00\xff")
    (baselines_dir() / "empty.json").write_text("{}")
    listed = {b.name: b for b in list_baselines()}
    assert set(listed) == {"good", "binb", "empty"} and listed["good"].side is not None
    assert "not UTF-8" in listed["binb"].problem and "not a specbench baseline" in listed["empty"].problem
    elsewhere = tmp_path / "elsewhere"
    save_baseline(make_run(tmp_path, "run2", BASE, SPEC), "other", dest_dir=elsewhere)
    assert [b.name for b in list_baselines(elsewhere)] == ["other"]


def test_recorded_real_run_round_trips(tmp_path, results):
    """A real run recorded by the runner (tests/data/runs/quick-cpu, 2 repetitions on a busy shared
    machine) saved as a baseline and compared with itself: ratio 1 everywhere, no failure; the cells
    whose noise cannot exclude a 5% regression are too noisy to decide (exit 3), not passed."""
    run = Path(__file__).parents[1] / "data" / "runs" / "quick-cpu"
    path = save_baseline(run, "quick", dest_dir=tmp_path).path
    assert path.stat().st_size < (run / "samples.jsonl").stat().st_size  # compact: no logs or metrics
    metrics = ["spec_tps", "baseline_tps", "speedup"]
    cmp = compare(load_side(str(path)), load_side(str(run)), metrics=metrics)
    assert cmp.exit_code == 3 and cmp.differences == [] and not cmp.failed
    cells = [c for m in cmp.metrics if m.metric != "output" for c in m.cells]
    greedy = [c for m in cmp.metrics if m.metric == "output" for c in m.cells]
    assert len(greedy) == 2 * 3 and all(c.status == "pass" for c in greedy)  # the same text, run vs itself
    # 2 prompts x (3 speculative cells for spec_tps and speedup + 1 baseline cell)
    assert len(cells) == 2 * (3 + 3 + 1)
    assert all(c.decision.ratio == 1.0 and c.decision.p_value is None for c in cells)
    for c in cells:
        noisy = max(c.decision.cv_base or 0, c.decision.cv_cur or 0) > 0.10
        assert c.decision.mde is not None and c.decision.low == pytest.approx(-c.decision.mde)
        if c.decision.mde > 0.05:
            assert c.status == "too_noisy" and "too noisy to decide" in c.reason
        else:
            assert c.status == ("warn" if noisy else "pass") and ("noisy" in c.reason) == noisy
    assert sum(c.status == "too_noisy" for c in cells) >= 8  # 2 repetitions on a busy machine
    allowed = compare(load_side(str(path)), load_side(str(run)), metrics=metrics, allow_noisy=True)
    assert allowed.exit_code == 0

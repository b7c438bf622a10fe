"""`specbench report` on recorded runs: every number recomputed here from samples.jsonl with the
json and statistics modules, independently of specbench.analysis.report, and compared to the JSON output.

The recorded runs in tests/data/runs/ are real llama.cpp runs (SmolLM2-135M F32 target, Q4_1
draft, CPU, pinned build) made with `specbench run`; only raw/ was dropped to keep them small.
"""

import json
import shutil

import pytest

from specbench.analysis.cells import CONTRACT_KEYS
from specbench.analysis.report import ReportError, aggregate, build_report, latest_run
from tests.helpers.reports import (
    NGL,
    QUICK,
    expected_rows,
    geomean_over_prompts,
    raw_samples,
    specbench,
    usable,
)


@pytest.fixture(scope="module")
def quick_json(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("quick")
    res = specbench("report", QUICK, "--format", "json", "--out", out)
    assert res.returncode == 0, res.stderr
    assert str(out / "report.md") in res.stderr  # paths go to stderr when stdout carries a format
    return json.loads(res.stdout)


@pytest.mark.parametrize("run", [QUICK, NGL], ids=["quick", "ngl"])
def test_numbers_match_an_independent_recomputation(run, tmp_path):
    res = specbench("report", run, "--format", "json", "--out", tmp_path)
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    expected = expected_rows(run)
    assert len(rows) == len(expected) and len(rows) >= 2
    for row in rows:
        cell = (row["pair"], row["method"], row["draft_max"], row["ngl"], row["ngld"])
        want = expected[cell]
        for key, value in want.items():
            if isinstance(value, float):
                assert row[key] == pytest.approx(value, rel=1e-9), key
            else:
                assert row[key] == value, key
        assert 0 < row["speedup_ci_low"] < row["speedup"] < row["speedup_ci_high"]
        assert row["category"] == "all"
        assert row["run"] == run.name


def test_json_follows_the_contract(quick_json):
    for row in quick_json:
        assert list(row)[: len(CONTRACT_KEYS)] == CONTRACT_KEYS
        assert isinstance(row["valid"], bool) and isinstance(row["n"], int)
    draft_rows = [r for r in quick_json if r["method"] == "draft"]
    ngram_rows = [r for r in quick_json if r["method"] != "draft"]
    assert draft_rows and ngram_rows
    # the model's inputs: a measured draft/target cost ratio for draft models, 0 for n-gram lookup
    assert all(0 < r["cost_ratio"] < 1 and r["predicted_speedup"] > 0 for r in draft_rows)
    assert all(r["cost_ratio"] == 0 and r["draft"] is None for r in ngram_rows)


def test_best_setting_marked_at_most_once_per_pair_on_a_decided_row(quick_json):
    """quick-cpu has 2 repetitions and every interval is over a factor 2 wide: no row is decided, so
    none is marked (issue 58: the ★ went to the highest figure, however wide its interval)."""
    for pair in {r["pair"] for r in quick_json}:
        rows = [r for r in quick_json if r["pair"] == pair]
        decided = [r for r in rows if r["speedup_ci_low"] and r["speedup_ci_high"] / r["speedup_ci_low"] <= 2]
        best = [r for r in rows if r["best"]]
        assert len(best) == (1 if decided else 0)
        assert all(b["speedup"] == max(r["speedup"] for r in decided) for b in best)


def test_category_rows_add_up():
    rows = aggregate([QUICK], by_category=True)
    samples = raw_samples(QUICK)
    categories = {s["category"] for s in samples if s["role"] == "speculative"}
    assert len(categories) >= 2
    overall = [r for r in rows if r.category == "all"]
    for r in overall:
        per_cat = [c for c in rows if c.cell() == r.cell() and c.category != "all"]
        assert {c.category for c in per_cat} == categories
        assert sum(c.n for c in per_cat) == r.n
        want = [
            s
            for s in samples
            if s["role"] == "speculative"
            and s["category"] == per_cat[0].category
            and usable(s)
            and (s["pair"], s["method"], s["draft_max"]) == (r.pair, r.method, r.draft_max)
        ]
        assert per_cat[0].spec_tps == pytest.approx(geomean_over_prompts(want))


def test_two_runs_side_by_side(tmp_path):
    res = specbench("report", QUICK, NGL, "--out", tmp_path)
    assert res.returncode == 0, res.stderr
    assert QUICK.name in res.stdout and NGL.name in res.stdout
    rows = aggregate([QUICK, NGL])
    assert {r.run for r in rows} == {QUICK.name, NGL.name}
    assert len(rows) == len(expected_rows(QUICK)) + len(expected_rows(NGL))


def test_table_output_prints_table_notes_and_paths(tmp_path):
    res = specbench("report", QUICK, "--out", tmp_path)
    assert res.returncode == 0, res.stderr
    assert "speedup" in res.stdout and "baseline t/s" in res.stdout
    for name in ("report.md", "report.html", "report.csv", "report.json", "speedup_vs_draft.png"):
        assert str(tmp_path / name) in res.stdout
        assert (tmp_path / name).stat().st_size > 0


def test_default_is_the_latest_run(tmp_path):
    results = tmp_path / "results"
    for name, started in (("b-older", "2026-01-01T00:00:00+00:00"), ("a-newer", "2026-06-01T00:00:00+00:00")):
        shutil.copytree(QUICK, results / name, ignore=shutil.ignore_patterns("report"))
        manifest = json.loads((results / name / "manifest.json").read_text())
        manifest["started_at"] = started
        (results / name / "manifest.json").write_text(json.dumps(manifest))
    (results / "baselines").mkdir()  # not a run
    assert latest_run(results) == results / "a-newer"
    res = specbench("report", cwd=tmp_path, env={"SPECBENCH_RESULTS": str(results)})
    assert res.returncode == 0, res.stderr
    assert (results / "a-newer" / "report" / "report.md").is_file()
    assert not (results / "b-older" / "report").exists()


@pytest.mark.parametrize("case", ["missing", "not-a-run", "empty", "no-results"])
def test_bad_run_dirs_get_one_line(case, tmp_path):
    run = tmp_path / "run"
    env = {"SPECBENCH_RESULTS": str(tmp_path / "results")}
    if case != "missing":
        run.mkdir()
    if case == "empty":
        (run / "samples.jsonl").write_text("")
    args = () if case == "no-results" else (run,)
    res = specbench("report", *args, cwd=tmp_path, env=env)
    assert res.returncode == 2  # bad input, as in every command
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in res.stderr
    with pytest.raises(ReportError):
        build_report([run]) if case != "no-results" else latest_run(tmp_path / "results")


def test_model_speedup_needs_a_calibration_and_is_set_for_draft_cells_when_there_is_one(tmp_path):
    from specbench.results.calibration import Calibration, PassCosts, save_calibration

    assert all(r.model_speedup is None for r in aggregate([QUICK]))
    run = tmp_path / "quick-cpu"
    shutil.copytree(QUICK, run)
    costs = [
        PassCosts(model=m, decode_s=d, pass_s={k: d * (1 + 0.3 * (k - 1)) for k in range(2, 34)})
        for m, d in (("smol_f32", 0.02), ("smol_q4", 0.01))
    ]
    save_calibration(run, Calibration(build="b", depth=300, models=costs))
    rows = aggregate([run])
    assert any(r.method == "draft" for r in rows)
    for r in rows:
        assert (r.model_speedup is not None) == (r.method == "draft" and r.tokens_per_pass is not None)
        if r.model_speedup is not None:
            assert 0 < r.model_speedup < r.draft_max + 1


def test_incomplete_and_unlike_runs_are_said_so(tmp_path):
    """An interrupted run gets no ★ and a note; runs with other generation settings side by side get
    a note naming them; temperature > 0 explains the missing match (issue 16)."""
    import json
    import shutil

    from specbench.analysis.report import build_report

    cut = shutil.copytree(QUICK, tmp_path / "cut")
    manifest = json.loads((cut / "manifest.json").read_text())
    manifest["status"] = "interrupted"
    (cut / "manifest.json").write_text(json.dumps(manifest))
    hot = shutil.copytree(QUICK, tmp_path / "hot")
    lines = [json.loads(line) for line in (hot / "samples.jsonl").read_text().splitlines()]
    for line in lines:
        line["generation"]["temperature"] = 0.7
        line["run_id"] = "hot"
    (hot / "samples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    manifest["status"], manifest["run_id"] = "complete", "hot"
    (hot / "manifest.json").write_text(json.dumps(manifest))
    rep = build_report([cut, hot])
    assert not any(r.best for r in rep.rows if r.run == rep.runs[0].run)
    assert any(r.best for r in rep.rows if r.run == "hot")
    assert "INCOMPLETE: interrupted" in rep.runs[0].caption()
    text = " ".join(rep.notes)
    assert "is incomplete (interrupted)" in text and "--resume" in text
    assert "Run hot samples at temperature > 0" in text
    assert "different generation settings" in text and "temperature 0.7" in text


def test_the_star_goes_to_a_decided_real_cell_only(tmp_path):
    """Issue 58: a 2-repetition run with synthetic cells: no cell is decided, so no ★ and a note
    says why; at 3 repetitions the real cell whose interval is decided gets it, not the synthetic
    one whose figure is higher."""
    from tests.helpers.synthetic import synthetic_run

    two = build_report([synthetic_run(tmp_path, "two", reps=2)])
    assert not any(r.best for r in two.rows)
    assert any("is marked best" in n and "undecided" in n for n in two.notes)
    three = build_report([synthetic_run(tmp_path, "three", reps=3)])
    overall = {r.method: r for r in three.shown(False)}
    assert overall["draft"].speedup > overall["ngram-simple"].speedup  # the synthetic cell is higher
    assert [r.method for r in three.shown(False) if r.best] == ["ngram-simple"]


def test_no_star_when_even_the_fastest_decided_cell_is_slower_than_its_baseline():
    """Seen on an H200 (benchmarks/results/cuda-e2e-h200): every cell ran at 0.4-0.5x and the
    report starred the fastest. A decided interval wholly below 1.0x gets no ★ and a note says the
    pair never beats its baseline; one that reaches 1.0x is still starred."""
    from specbench.analysis.report import _mark_best

    rows = [r for r in build_report([QUICK]).rows if r.speedup is not None and not r.synthetic]
    for i, r in enumerate(rows):
        r.best, r.speedup, r.speedup_ci_low, r.speedup_ci_high = False, 0.5 + i / 100, 0.45, 0.56 + i / 100
    notes = _mark_best(rows)
    assert not any(r.best for r in rows)
    assert any("beats its baseline" in n.text and "whole 95% interval below 1.0x" in n.text for n in notes)
    rows[0].speedup, rows[0].speedup_ci_low, rows[0].speedup_ci_high = 0.95, 0.9, 1.02
    notes = _mark_best(rows)
    assert [r.best for r in rows].count(True) >= 1 and rows[0].best
    assert not any("beats its baseline" in n.text for n in notes)


def test_a_mismatch_warning_says_where_and_why_it_can_happen():
    """Seen on an H200 (greedy, draft_max 4 differed at character 57): the warning names the cell,
    the first difference and the batch-rounding cause, so a GPU user can tell it from a bug."""
    from specbench.analysis.report import _notes

    rows = [r for r in build_report([QUICK]).rows if r.speedup is not None]
    rows[0].outputs_match, rows[0].first_diff = False, 57
    text = " ".join(c.text for c in _notes([], rows))
    assert "first difference at character 57" in text and "round differently" in text

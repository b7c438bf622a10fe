"""Speculation at depth in the report: per setting, speedup and acceptance against depth with
their intervals, the break-even depth, the table and the figure (run folders with stated t/s)."""

from __future__ import annotations

import json

import pytest

from specbench.analysis.depth import DepthCurve, DepthPoint, depth_curves
from specbench.analysis.render import write_report
from specbench.analysis.report import build_report
from specbench.parse.process import ParsedLog
from specbench.results.records import Generation, Sample
from specbench.results.samplelog import append_sample
from tests.helpers.runs import manifest

# depth -> (baseline t/s, speculative t/s, acceptance) per repetition
PAYS_THEN_LOSES = {
    0: ([30.0, 30.3, 29.8], [45.0, 44.6, 45.3], [0.80, 0.82, 0.81]),
    1024: ([28.0, 28.2, 27.9], [33.0, 33.4, 32.8], [0.70, 0.72, 0.69]),
    4096: ([24.0, 24.3, 23.9], [20.0, 20.2, 19.8], [0.55, 0.58, 0.56]),
}


def write_depth_run(root, depths=PAYS_THEN_LOSES):
    run_dir = root / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text(json.dumps(manifest("r1")))
    common = dict(run_id="r1", category="chat", generation=Generation(n_predict=48, threads=2), wall_s=1.0,
                  started_at="2026-01-01T00:00:00", prompt_id="p1", status="ok", valid=True)  # fmt: skip
    for depth, (base, spec, acc) in depths.items():
        for rep, (b, s, a) in enumerate(zip(base, spec, acc, strict=True)):
            at = dict(repetition=rep, depth=depth, model="smol-f32", **common)
            append_sample(run_dir, Sample(role="baseline", tps=b, **at))
            append_sample(run_dir, Sample(
                role="speculative", pair="smol", draft="smol-q4", method="draft", draft_max=8, tps=s,
                acceptance=a, **at,
                metrics=ParsedLog(kind="speculative", n_drafted=100, n_accept=round(100 * a)),
            ))  # fmt: skip
    return run_dir


def test_each_depth_is_judged_against_its_own_baseline_and_the_break_even_is_named(tmp_path):
    report = build_report([write_depth_run(tmp_path)])
    [curve] = depth_curves(report.rows)
    assert [p.depth for p in curve.points] == [0, 1024, 4096]
    assert [p.verdict for p in curve.points] == ["pays", "pays", "loses"]
    first = curve.points[0]
    assert first.speedup == pytest.approx(45.0 / 30.0, rel=0.01)  # against depth 0's baseline, not another's
    assert first.acceptance_ci_low < 0.81 < first.acceptance_ci_high
    assert curve.break_even == "break-even between depth 1024 (pays) and 4096 (it loses)"
    files = write_report(report, tmp_path / "out")
    text = files.markdown.read_text()
    assert "### Speculation at depth" in text and "break-even between depth 1024 (pays) and 4096" in text
    assert "| 4096 | 0.831 [0.825, 0.837] | 56.3% [" in text
    assert any(p.name == "speedup_vs_depth.png" for p in files.plots)


def _curve(*bounds):
    none = dict(acceptance=None, acceptance_ci_low=None, acceptance_ci_high=None, n=3)
    points = [
        DepthPoint(depth=d, speedup=(lo + hi) / 2, speedup_ci_low=lo, speedup_ci_high=hi, **none)
        for d, (lo, hi) in zip([0, 1024, 4096], bounds, strict=False)
    ]
    return DepthCurve(setting={}, points=points)


def test_the_break_even_reads_the_intervals_in_depth_order():
    assert _curve((1.1, 1.2), (1.05, 1.1), (1.01, 1.03)).break_even == "pays at every depth measured"
    assert _curve((0.9, 1.05), (0.8, 0.9)).break_even == "never pays at the depths measured"
    even = _curve((1.1, 1.2), (0.95, 1.05), (0.8, 0.9)).break_even
    assert even == "break-even between depth 0 (pays) and 1024 (its interval holds 1.0)"


def test_a_run_at_one_depth_has_no_depth_section(tmp_path):
    report = build_report([write_depth_run(tmp_path, {0: PAYS_THEN_LOSES[0]})])
    assert depth_curves(report.rows) == []
    files = write_report(report, tmp_path / "out")
    assert "Speculation at depth" not in files.markdown.read_text()
    assert not any(p.name == "speedup_vs_depth.png" for p in files.plots)


def test_a_depth_whose_draft_ran_out_of_context_is_named_not_averaged_in(tmp_path):
    """The plan left depth 4096 out (its draft's context cannot hold it) and the manifest says so:
    the table has its row as not run, the break-even line and the notes name it, and the curve's
    figures are the measured depths' only."""
    reason = (
        "draft out of context: smol draft at depth 4096 is not run: draft smol-q4's context (2048 tokens, "
        "its GGUF context_length) cannot hold the depth, the prompt and n_predict 48 (4200 tokens); use a "
        "draft trained on a longer context, or lower the depth"
    )
    measured = {d: PAYS_THEN_LOSES[d] for d in (0, 1024)}
    run_dir = write_depth_run(tmp_path, measured)
    cell = dict(pair="smol", model="smol-f32", draft="smol-q4", method="draft", draft_max=8, depth=4096)
    data = {**manifest("r1"), "left_out": [{"cell": cell, "reason": reason}, {"cell": {}, "reason": 1}]}
    (run_dir / "manifest.json").write_text(json.dumps(data))  # the second entry is unreadable: skipped
    report = build_report([run_dir])
    [curve] = depth_curves(report.rows, report.not_run)
    assert [(p.depth, p.verdict) for p in curve.points] == [(0, "pays"), (1024, "pays"), (4096, "not run")]
    assert curve.points[2].speedup is None and curve.points[2].n == 0
    assert curve.break_even == "pays at every depth measured; not run at depth 4096 (draft out of context)"
    assert f"r1: {reason}" in report.notes
    text = write_report(report, tmp_path / "out").markdown.read_text()
    assert "| 4096 | not run: draft out of context (see the notes) | - | 0 |" in text
    assert "pays at every depth measured; not run at depth 4096 (draft out of context)" in text
    assert sorted(r.depth for r in report.rows if r.category == "all") == [0, 1024]  # no row measured it

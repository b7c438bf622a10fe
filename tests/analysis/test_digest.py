"""The end of a run: one line per kind of warning, naming its cells, never the same finding once
per cell; and what would meet the precision."""

from __future__ import annotations

import json

from specbench.analysis.report import build_report, digest
from tests.helpers.runs import make_run

BASE = [30.0, 30.3, 29.8, 30.1, 30.2, 45.0]  # one baseline repetition far off: every cell shares it
SPEC = {4: [45.0, 40.0, 50.0, 44.0, 47.0, 43.0], 8: [50.0, 50.4, 49.7, 50.1, 50.2, 49.9],
        16: [52.0, 30.0, 60.0, 41.0, 58.0, 36.0]}  # fmt: skip


def test_one_line_per_kind_naming_the_cells(tmp_path):
    rows = build_report([make_run(tmp_path, "run1", BASE, SPEC)]).shown(False)
    per_row = [w for r in rows for w in r.warnings]
    lines = digest(rows)
    kinds = [line.split(" in ")[0] for line in lines]
    assert len(kinds) == len(set(kinds)) and len(lines) < len(per_row)
    (outlier,) = [line for line in lines if line.startswith("outlier repetitions (baseline)")]
    assert outlier.startswith("outlier repetitions (baseline) in 3 of 3 cells (smol draft_max 4, ")
    assert outlier.count("rep 6") == 1  # said once, not under every cell
    (imprecise,) = [line for line in lines if line.startswith("imprecise")]
    assert (
        imprecise.startswith("imprecise in 3 of 3 cells (") and "smol draft_max 16 spec ±28.0%" in imprecise
    )
    assert "repetitions would meet it" in imprecise  # what would meet the precision, in the same line


def test_cells_that_differ_only_in_parallel_are_told_apart(tmp_path):
    from specbench.results.samplelog import append_sample, load_samples

    run = make_run(tmp_path, "run1", BASE, {4: SPEC[16], 8: SPEC[8]})  # 8: a decided cell, for the ★
    for s in load_samples(run):
        append_sample(run, s.model_copy(update={"parallel": 2}))
    rows = build_report([run]).shown(False)
    assert {r.parallel for r in rows} == {1, 2}
    (line,) = [x for x in digest(rows) if x.startswith("imprecise")]
    assert "draft_max 4 parallel 1 spec" in line and "draft_max 4 parallel 2 spec" in line
    assert sum(r.best for r in rows) == 2  # a ★ per parallel value: speedups compare within one


def test_compare_labels_name_the_servers_parallel(tmp_path):
    from specbench.gate.compare import cell_label
    from specbench.results.samplelog import load_samples

    spec = next(s for s in load_samples(make_run(tmp_path, "r", BASE, SPEC)) if s.role == "speculative")
    labels = {cell_label(spec.model_copy(update={"runner": "server", "parallel": p})) for p in (1, 2)}
    assert len(labels) == 2 and any("parallel=2" in label for label in labels)
    assert cell_label(spec) == "smol draft draft_max=4"  # the process runner's names are unchanged


def test_a_runs_workaround_is_said_once_by_the_report_not_again_per_cell(tmp_path):
    """Issue 58 item 10: a run of a build with the self-test's workaround ended with it twice, the
    digest's ``WARNING: workaround repack-off in the cell`` and the report's note for the run."""
    run = make_run(tmp_path, "run1", BASE, SPEC)
    m = json.loads((run / "manifest.json").read_text())
    m["build"]["selftest"] = {"workaround": {"name": "repack-off", "flag": "--no-repack"}}
    (run / "manifest.json").write_text(json.dumps(m))
    report = build_report([run])
    assert all("workaround repack-off: --no-repack" in r.warnings for r in report.shown(False))
    said = [c.text for c in report.caveats if "repack-off" in c.text]
    assert len(said) == 1 and "self-test's workaround" in said[0]

"""Report quality fields and warnings on constructed samples (what a run folder would hold)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specbench.analysis.quality import assess
from specbench.results.manifest import RunFacts
from specbench.results.manifestfile import read_facts
from specbench.results.records import Generation, Sample

REPO = Path(__file__).resolve().parents[2]


def s(role: str, prompt: str, rep: int, tps: float, n_generated: int = 128) -> Sample:
    return Sample(
        role=role,
        pair="p" if role == "speculative" else None,
        model="t",
        method="draft" if role != "baseline" else "none",
        prompt_id=prompt,
        category="code",
        repetition=rep,
        generation=Generation(n_predict=128),
        run_id="r",
        status="ok",
        valid=True,
        tps=tps,
        n_generated=n_generated,
        wall_s=1.0,
        started_at="now",
    )


def cell(spec: list[float], base: list[float], n_generated: int = 128) -> tuple[list[Sample], list[Sample]]:
    return (
        [s("speculative", "a", i, v, n_generated) for i, v in enumerate(spec)],
        [s("baseline", "a", i, v, n_generated) for i, v in enumerate(base)],
    )


AUTO = RunFacts(run_id="r", auto_repetitions=True, precision=0.03, min_decode_s=1.0)


def test_precision_met_only_judged_with_auto_repetitions():
    spec, base = cell([100.0, 100.5, 99.5, 100.2], [50.0, 50.1, 49.9, 50.0])
    q = assess(spec, base, AUTO)
    assert q.precision_met is True and q.spec_tps_rel_ci < 0.03 and q.baseline_tps_rel_ci < 0.03
    assert not any(w.startswith("imprecise") for w in q.warnings)
    assert assess(spec, base, RunFacts(run_id="r")).precision_met is None


def test_imprecise_cell_is_flagged_and_fixed_runs_are_pointed_at_auto():
    spec, base = cell([100.0, 80.0, 120.0], [50.0, 50.1, 49.9])
    q = assess(spec, base, AUTO)
    assert q.precision_met is False
    (w,) = [w for w in q.warnings if w.startswith("imprecise")]
    assert "spec t/s ±" in w and "after 3 repetitions" in w and "repetitions=auto" not in w
    fixed = assess(spec, base, RunFacts(run_id="r", precision=0.03))
    assert any("try --set repetitions=auto" in w for w in fixed.warnings)


def test_short_decode_window_names_the_n_predict_that_reaches_it():
    # 128 tokens at 400 t/s (spec) = 0.32 s; reaching 1.0 s takes 400 tokens -> 400 (a multiple of 16)
    spec, base = cell([400.0, 400.0], [100.0, 100.0])
    (w,) = [w for w in assess(spec, base, AUTO).warnings if w.startswith("short decode window")]
    assert "0.32 s (spec)" in w and "n_predict 400" in w
    slow_spec, slow_base = cell([100.0, 100.0], [100.0, 100.0])  # 1.28 s: long enough
    assert not any(w.startswith("short") for w in assess(slow_spec, slow_base, AUTO).warnings)
    early_spec, early_base = cell([400.0, 400.0], [100.0, 100.0], n_generated=40)
    (w,) = [w for w in assess(early_spec, early_base, AUTO).warnings if w.startswith("short")]
    assert "by themselves" in w


@pytest.mark.parametrize(
    "values, verdict",
    [
        ([50.0, 50.2, 49.9, 50.1, 50.0, 20.0], "beyond the others' 95% CI"),
        ([40, 45, 50, 55, 60] * 4 + [95], "within the others'"),
    ],
)
def test_outlier_repetitions_and_whether_they_matter(values, verdict):
    spec, base = cell([float(v) for v in values], [50.0] * len(values))
    (w,) = [w for w in assess(spec, base, AUTO).warnings if w.startswith("outlier")]
    assert "(spec)" in w and "a rep" in w and verdict in w


def test_busy_machine_is_a_row_warning():
    spec, base = cell([100.0, 100.0], [50.0, 50.0])
    facts = RunFacts(
        run_id="r", busy=["another benchmark is running (pid 1 llama-server)", "GPU 0 at 90% busy"]
    )
    assert (
        "busy machine: another benchmark is running (pid 1 llama-server) (+1 more)"
        in assess(spec, base, facts).warnings
    )


def test_a_run_resumed_on_another_machine_is_a_row_warning(tmp_path):
    run = shutil.copytree(REPO / "tests/data/runs/quick-cpu", tmp_path / "run")
    data = json.loads((run / "manifest.json").read_text())
    data["other_machines"] = ["hostname box-a, here box-b"]
    (run / "manifest.json").write_text(json.dumps(data))
    facts = read_facts(run)  # as the report reads it
    spec, base = cell([100.0, 100.0], [50.0, 50.0])
    warning = "mixed machines: resumed with --force on another (hostname box-a, here box-b)"
    assert warning in assess(spec, base, facts).warnings
    assert not any(w.startswith("mixed") for w in assess(spec, base, RunFacts(run_id="r")).warnings)

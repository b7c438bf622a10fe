"""`specbench report` prints a config's published figures (`expect:`) beside the measured ones.

The run is a recorded real run (tests/data/runs/quick-cpu) whose manifest gets the `expect:` of a
shipped config as `specbench run` stores it (the config dumped into the manifest); the measured
side is recomputed here from samples.jsonl, independently of specbench.analysis."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specbench.analysis.report import build_report
from specbench.plan.config import load_config
from tests.helpers.reports import QUICK, expected_rows, specbench

ROOT = Path(__file__).parents[2]


def run_with_expect(tmp_path: Path, config: str) -> Path:
    run = tmp_path / "run"
    shutil.copytree(QUICK, run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"] = {**manifest["config"], **load_config(ROOT / config).model_dump(mode="json")}
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def one_line(text: str) -> str:
    return " ".join(text.split())  # the table output wraps long notes


@pytest.mark.parametrize(
    ("config", "published"),
    [
        ("configs/seeds/003-codellama-7b-tinyllama-metal.yaml",
         "(Apple silicon (Metal), llama.cpp, CodeLlama-7B f16 + TinyLlama-1.1B q4_0, code (seed document)):"
         " acceptance 61-72%, speculative 33-40 t/s."),
        ("configs/rtx4090-8b.yaml",
         "(RTX 3060 12 GB, Llama-3.1-8B Q8_0 + Llama-3.2-1B Q8_0, llama.cpp): speedup 1.71x,"
         " speculative 55.5 t/s, baseline 32.5 t/s."),
        ("configs/seeds/002-gpt2-355m-124m.yaml",
         "(GPT-2 355M + 124M, speculative sampling in NumPy on a CPU (seed document)): speedup 1.51x."
         " 112 s plain, 74 s speculative for one generation."),
    ],
)  # fmt: skip
def test_the_report_sets_the_published_figure_beside_the_measured_one(tmp_path, config, published):
    run = run_with_expect(tmp_path, config)
    best_cell, best = max(expected_rows(QUICK).items(), key=lambda kv: kv[1]["speedup"])
    pair, method, draft_max = best_cell[:3]
    run_id = json.loads((run / "manifest.json").read_text())["run_id"]
    cell = pair + (f" {method}" if method != "draft" else "")  # a draft-model cell goes by its pair
    cell += f" draft_max {draft_max}" if draft_max else ""
    measured = (
        # quick-cpu's 2 repetitions decide no cell (issue 58): its highest is named as what it is
        f"Measured in {run_id} (highest cell, undecided, {cell}): speedup {best['speedup']:.2f}x, "
        f"acceptance {best['acceptance']:.1%}, speculative {best['spec_tps']:.1f} t/s, "
        f"baseline {best['baseline_tps']:.1f} t/s."
    )
    line = f"Published for this setup {published} {measured}"
    assert line in build_report([run]).notes  # after the warnings (issue 58: warnings first)
    if config.endswith(
        "003-codellama-7b-tinyllama-metal.yaml"
    ):  # the command prints it (once: plots are slow)
        table = specbench("report", run, "--out", tmp_path / "out")
        assert table.returncode == 0, table.stderr
        assert f"note: {line}" in one_line(table.stdout)


def test_a_run_without_expect_has_no_published_line():
    assert not [n for n in build_report([QUICK]).notes if n.startswith("Published")]


def test_the_measured_side_is_the_cell_that_may_be_called_best(tmp_path):
    """Issue 58: the published figure was set beside the highest speedup, a synthetic cell's too;
    it is the best by the one rule (``figures.pick_best``): a decided real cell."""
    from tests.helpers.synthetic import synthetic_run

    run = synthetic_run(tmp_path, "three", reps=3)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"]["expect"] = {"speedup": 1.5}
    (run / "manifest.json").write_text(json.dumps(manifest))
    report = build_report([run])
    assert max(report.shown(False), key=lambda r: r.speedup or 0).synthetic  # the highest is synthetic
    (line,) = [n for n in report.notes if n.startswith("Published")]
    assert "(best cell, smol ngram-simple): speedup 1.40x" in line

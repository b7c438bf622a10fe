"""Synthetic acceptance and the server's draft counters, with the real llama-server of the pinned
build on SmolLM2: one prompt, 16 tokens, one repetition, draft_max 4 and synth_len 1, 3 and 5
(5 = draft_max + 1: every draft accepted). Timing is not asserted: the acceptance length counted by
``/metrics`` must rise with synth_len, which holds on any machine.
"""

from __future__ import annotations

import json

import pytest
import yaml

from specbench.results.samplelog import load_samples
from tests.fixtures.build import assert_one_line_error, cli
from tests.helpers.realruns import server_config

pytestmark = pytest.mark.slow

LENGTHS = [1.0, 3.0, 5.0]


@pytest.fixture(scope="module")
def synth_run(tmp_path_factory, llama_build, smol_target, smol_q4):
    tmp = tmp_path_factory.mktemp("synth")
    data = server_config(tmp, smol_target, smol_q4, warmup=0)
    data["sweep"] = {"draft_max": [4], "synth_len": LENGTHS}
    data["prompts"]["ids"] = ["sum"]
    config = tmp / "synth.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    run_dir = tmp / "results" / "run"
    result = cli("run", str(config), "--out", str(run_dir), env={"SPECBENCH_RESULTS": str(tmp / "results")},
                 timeout=1800)  # fmt: skip
    return result, run_dir, config


def test_synthetic_cells_are_marked_uncompared_and_counted(synth_run):
    result, run_dir, _ = synth_run
    assert result.returncode == 0, result.stderr[-3000:]
    spec = [s for s in load_samples(run_dir) if s.role == "speculative"]
    synth = {s.synth_len: s for s in spec if s.synthetic}
    assert sorted(synth) == LENGTHS
    for length, s in synth.items():
        assert s.status == "ok" and s.valid, s.invalid_reason
        assert s.outputs_match is None  # random acceptance: the output is not valid, so not compared
        assert ["--spec-synth-len", f"{length:g}"] == s.cmd[s.cmd.index("--spec-synth-len") :][:2]
        assert s.spec_counters.steps > 0 and s.spec_counters.drafted > 0
    real = [s for s in spec if not s.synthetic]
    assert len(real) == 1 and real[0].synth_len is None and real[0].outputs_match is True
    assert "--spec-synth-len" not in real[0].cmd and "--metrics" in real[0].cmd
    assert synth[1.0].spec_counters.accepted == 0  # length 1: nothing but the target's own token


def test_report_rows_carry_accept_len_and_the_curve_plot(synth_run):
    result, run_dir, _ = synth_run
    assert result.returncode == 0, result.stderr[-3000:]
    out = run_dir / "rep"
    report = cli("report", str(run_dir), "--format", "json", "--out", str(out))
    assert report.returncode == 0, report.stderr[-2000:]
    rows = [r for r in json.loads(report.stdout) if r["category"] == "all"]
    synth = sorted((r for r in rows if r["synthetic"]), key=lambda r: r["synth_len"])
    assert [r["synth_len"] for r in synth] == LENGTHS
    lens = [r["accept_len"] for r in synth]
    assert lens[0] == 1.0 and lens[0] < lens[1] < lens[2] <= 5.0, lens
    for r in synth:
        assert len(r["accept_by_pos"]) == 4 and r["outputs_match"] is None and not r["best"]
    assert synth[-1]["accept_by_pos"][0] > synth[0]["accept_by_pos"][0] == 0.0
    (real,) = [r for r in rows if not r["synthetic"]]
    assert real["synth_len"] is None and real["accept_len"] >= 1.0 and real["accept_by_pos"]
    assert (out / "speedup_vs_accept_len.png").stat().st_size > 0
    assert (out / "acceptance_by_position.png").stat().st_size > 0


def test_the_process_runner_refuses_synth(synth_run):
    _, _, config = synth_run
    result = cli("run", str(config), "--set", "runner=process", "--dry-run")
    assert_one_line_error(result, "sweep.synth_len", "runner: server")

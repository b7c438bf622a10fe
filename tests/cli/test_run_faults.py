"""`specbench run` as a CI runner treats it: SIGTERM/SIGHUP mid-run, the printed resume command
run as printed (no CONFIG), the closing table equal to `specbench report`'s, and a run that measured
nothing failing the job. Real llama.cpp runs of the 135M model, 16 tokens each (issue 16)."""

from __future__ import annotations

import os
import shlex
import signal

import pytest

from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.fixtures.build import assert_one_line_error
from tests.fixtures.build import cli_process as cli
from tests.helpers.procs import processes_with, start_and_signal
from tests.helpers.realruns import ngram_config

# the integration tier (make test-integration): each rule here is also proven over replayed runs in
# tests/execute/test_runner_replay.py (docs/development.md, "Tests and linters")
pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_signal_keeps_samples_and_the_printed_resume_command_works(tmp_path, llama_build, smol_q4, sig):
    config, marker = ngram_config(tmp_path, smol_q4)
    run_dir = tmp_path / "run dir"  # a space: the printed command must quote it
    env = {**os.environ, "SPECBENCH_RESULTS": str(tmp_path / "results")}
    code, _, err = start_and_signal(
        config, run_dir, sig, env, "--set", "repetitions=2", "--set", "generation.n_predict=16", wait_s=300
    )
    assert code == 128 + sig, err
    assert "Traceback" not in err and f"interrupted ({sig.name})" in err
    assert not processes_with(marker), "llama.cpp outlived the run"
    kept = load_samples(run_dir)
    assert 1 <= len(kept) < 4
    man = load_manifest(run_dir)
    assert man.status == "interrupted" and man.status_reason == sig.name
    printed = next(line for line in err.splitlines() if line.startswith("resume with: "))
    argv = shlex.split(printed.removeprefix("resume with: "))
    assert argv == ["specbench", "run", "--resume", str(run_dir)]
    if sig is signal.SIGHUP:
        return
    resumed = cli(*argv[1:], env={"SPECBENCH_RESULTS": str(tmp_path / "results"), "COLUMNS": "200"})
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    samples = load_samples(run_dir)
    assert len(samples) == 4 and len({s.sample_key() for s in samples}) == 4  # the --set overrides held
    assert {s.generation.n_predict for s in samples} == {16}
    assert load_manifest(run_dir).status == "complete"
    # the closing table is the table `specbench report` prints, row for row
    report = cli("report", str(run_dir), env={"COLUMNS": "200"})
    assert report.returncode == 0, report.stderr
    # the table's rows (report also prints its warnings, which name the cell too)
    run_rows = [line for line in resumed.stdout.splitlines() if line.startswith("│") and "lookup" in line]
    report_rows = [line for line in report.stdout.splitlines() if line.startswith("│") and "lookup" in line]
    assert run_rows and run_rows == report_rows


def test_a_run_that_measured_nothing_fails(tmp_path, llama_build, smol_q4):
    config, _ = ngram_config(tmp_path, smol_q4)
    run_dir = tmp_path / "run"
    result = cli("run", str(config), "--out", str(run_dir), "--quiet", "--set", "repetitions=1",
                 "--set", "timeout_s=0.05", env={"SPECBENCH_RESULTS": str(tmp_path / "results")})  # fmt: skip
    last = assert_one_line_error(result, "1 of 1 cells have no valid sample", "lookup ngram-simple")
    assert "samples.jsonl" in last
    assert {s.status for s in load_samples(run_dir)} == {"timeout"}
    assert "0/1 !" in result.stdout  # the table is still printed
    assert not [
        p.name for p in (run_dir / "raw").iterdir() if "nNone" in p.name
    ]  # n-gram cells: no draft_max

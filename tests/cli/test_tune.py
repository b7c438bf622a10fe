"""`specbench tune` for real: a tiny pair, one short prompt (a budget a loaded machine still fits)."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from specbench.execute.server import post, start_server
from specbench.parse.process import parse_text
from specbench.results.samplelog import load_samples
from tests.fixtures.build import assert_one_line_error, cli
from tests.helpers.realruns import short_prompt, threads, write_config
from tests.helpers.tunes import BEST_KEYS, check_tune_contract

pytestmark = pytest.mark.slow


def tiny(tmp: Path, f32, q4) -> Path:
    return write_config(
        tmp / "tiny.yaml",
        name="tiny",
        models={"f32": {"path": str(f32.path)}, "q4": {"path": str(q4.path)}},
        pairs={"smol": {"target": "f32", "draft": "q4"}},
        prompts={"file": str(short_prompt(tmp))},
        generation={"n_predict": 16, "threads": threads()},
        warmup=0,
        timeout_s=300,
    )


# integration tier; its rule, replayed: tests/cli/test_tune_replay.py (a test of the same name)
@pytest.mark.integration
def test_tune_prints_the_contract_json_and_writes_a_reportable_run(tmp_path, llama_build, smol_f32, smol_q4):
    run_dir = tmp_path / "tuned"
    config = tiny(tmp_path, smol_f32, smol_q4)
    env = {"SPECBENCH_RESULTS": str(tmp_path / "results")}  # a history of its own
    sweep = cli("run", str(config), "--set", "sweep.draft_max=[2]", "--set", "repetitions=1", "--quiet",
                "--out", str(tmp_path / "sweep"), env=env, timeout=600)  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    result = cli("tune", str(config), "--pair", "smol", "--budget", "900", "--max-draft", "3",
                 "--format", "json", "--out", str(run_dir), env=env, timeout=1800)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = subprocess.run(
        [sys.executable, "-m", "specbench", "report", str(run_dir), "--format", "json"],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    out = json.loads(result.stdout)
    check_tune_contract(out, run_dir, tmp_path / "results" / "history.sqlite", report,
                        models=[str(smol_f32.path), str(smol_q4.path)])  # fmt: skip
    known = out["baseline_history"]
    at_sweep_level = out["speedup"] * known["tune_tps"] / known["low_tps"]
    assert out["speedup_range_low"] == pytest.approx(
        min(out["speedup_ci_low"] or at_sweep_level, at_sweep_level)
    )
    assert out["speedup_range_high"] == pytest.approx(
        max(out["speedup_ci_high"] or at_sweep_level, at_sweep_level)
    )
    assert out["speedup_ci_low"] is None or out["speedup_ci_low"] <= out["speedup"]
    assert out["elapsed_s"] > 0


def test_tune_of_an_unknown_pair_is_a_one_line_error(tmp_path, smol_q4):
    config = write_config(
        tmp_path / "c.yaml",
        models={"q4": {"path": str(smol_q4.path)}},
        pairs={"ng": {"target": "q4", "method": "ngram-simple"}},
    )
    assert_one_line_error(cli("tune", str(config), "--pair", "nope"), "--pair nope", "no such pair")
    assert_one_line_error(cli("tune", str(config)), "pair with a draft model")


# integration tier; its rule, replayed: tests/cli/test_tune_replay.py (docs/development.md's table)
@pytest.mark.integration
def test_tune_on_the_server_runner_measures_with_servers_and_prints_commands_that_run(
    tmp_path, llama_build, smol_f32, smol_q4
):
    """`--set runner=server`: every round goes to llama-server (no one-shot server process timing
    out), and both printed commands run as printed: llama-speculative-simple through a shell with
    $PROMPT set, llama-server (given a free port) answers a request, speculating."""
    run_dir = tmp_path / "tuned"
    config = str(tiny(tmp_path, smol_f32, smol_q4))
    # a budget that tune's own minimum (it prices the rounds from the first run) does not refuse on a
    # loaded machine; the rounds are bounded (a winner with 3 rounds ends tune), so a quiet one stops early
    result = cli("tune", config, "--set", "runner=server", "--budget", "600", "--max-draft", "3", "--json",
                 "--out", str(run_dir), timeout=1500)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout)
    assert set(out["best"]) == BEST_KEYS and out["speedup"] is not None
    samples = load_samples(run_dir)
    assert samples and all(s.runner == "server" and s.status == "ok" for s in samples), [
        (s.status, s.invalid_reason) for s in samples if s.status != "ok"
    ]
    assert list(run_dir.glob("raw/*-server.stderr")), "the rounds were measured by llama-server"

    g = str(out["best"]["draft_max"])
    assert "llama-speculative-simple" in out["command"] and f" {g} " in out["command"]
    env = {**os.environ, "PROMPT": "Count from 1 to 20:"}
    ran = subprocess.run(["bash", "-c", out["command"]], capture_output=True, text=True, timeout=300,
                         stdin=subprocess.DEVNULL, env=env)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert parse_text(ran.stderr).n_drafted > 0

    argv = [*shlex.split(out["server_command"]), "--port", "0"]  # as printed, on a free port
    assert Path(argv[0]).name == "llama-server" and g in argv
    server = start_server(argv, tmp_path / "srv.out", tmp_path / "srv.err", timeout_s=300)
    try:
        reply = post(server, "/completion", {"prompt": "Count from 1 to 20:", "n_predict": 16}, 300)
    finally:
        server.stop()
    assert reply.data is not None, reply.error
    assert reply.data["content"] and reply.data["timings"].get("draft_n", 0) > 0


# integration tier; its rule, replayed: tests/cli/test_tune_replay.py (a test of the same name)
@pytest.mark.integration
def test_a_tune_that_measured_nothing_exits_non_zero_before_calibrating(
    tmp_path, llama_build, smol_f32, smol_q4
):
    """Every probe sample fails (each run killed at its 50 ms timeout; a prompt over ctx_size is
    refused before anything runs): one line, exit 1."""
    run_dir = tmp_path / "tuned"
    result = cli("tune", str(tiny(tmp_path, smol_f32, smol_q4)), "--set", "timeout_s=0.05",
                 "--budget", "60", "--max-draft", "3", "--json", "--out", str(run_dir))  # fmt: skip
    last = assert_one_line_error(result, "tune's probe measured no speedup", str(run_dir / "samples.jsonl"))
    assert "samples failed, timed out or never speculated" in last
    assert result.stdout == "" and not (run_dir / "calibration.json").exists()
    assert load_samples(run_dir) and all(not s.valid for s in load_samples(run_dir))

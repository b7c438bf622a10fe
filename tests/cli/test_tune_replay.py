"""`specbench tune` as a user runs it, its rounds and calibration replayed (tests/fixtures/replay.py:
recorded llama.cpp runs, and a recorded llama-bench JSON for the pass costs), in seconds. The real
tune runs stay in the integration tier (tests/cli/test_tune.py, tests/cli/test_tune_faults.py)."""

from __future__ import annotations

import json
import shlex
import signal
from pathlib import Path

import pytest

from specbench.base.errors import Terminated
from specbench.results.calibration import load_calibration
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.fixtures.replay import Take
from tests.helpers.cli import invoke
from tests.helpers.tunes import BEST_KEYS, check_busy_tune, check_tune_contract

CI = Path(__file__).resolve().parents[2] / "configs" / "ci.yaml"
ONE_PROMPT = ["--set", "prompts.ids=[code-02]", "--set", "pairing=sequential", "--set", "sentinel=false",
              "--set", "warmup=0"]  # fmt: skip


def test_tune_prints_the_contract_json_and_writes_a_reportable_run(tmp_path, replay):
    run_dir = tmp_path / "tuned"
    env = {"SPECBENCH_RESULTS": str(tmp_path / "results")}  # a history of its own
    sweep = invoke("run", CI, *ONE_PROMPT, "--set", "sweep.draft_max=[2]", "--set", "repetitions=1",
                   "--quiet", "--out", tmp_path / "sweep", env=env, cwd=tmp_path)  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    result = invoke("tune", CI, *ONE_PROMPT, "--pair", "smol", "--budget", "900", "--max-draft", "3",
                    "--format", "json", "--out", run_dir, env=env, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = invoke("report", run_dir, "--format", "json", cwd=tmp_path)
    check_tune_contract(json.loads(result.stdout), run_dir, tmp_path / "results" / "history.sqlite", report,
                        models=["SmolLM2-135M-Instruct.Q4_1.gguf"])  # fmt: skip
    assert replay.bench_log and all("llama-bench" in argv[0] for argv in replay.bench_log)


def test_a_budget_below_the_minimum_is_refused_with_the_minimum(tmp_path, replay):
    """Without history, refused after the first prompt's probe (its pace: ~2.4 virtual seconds a
    sample) before calibrating; once history holds the probe's cells, before anything runs."""
    env = {"SPECBENCH_RESULTS": str(tmp_path / "results")}
    result = invoke("tune", CI, *ONE_PROMPT, "--budget", "1", "--max-draft", "3", "--out", tmp_path / "t",
                    env=env, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "--budget 1 is too small for this config here" in line
    assert int(line.split("give --budget ")[1].split()[0]) > 1
    assert not (tmp_path / "t" / "calibration.json").exists() and not replay.bench_log  # before calibrating
    assert load_manifest(tmp_path / "t").status == "failed"
    ran = invoke("run", CI, *ONE_PROMPT, "--set", "sweep.draft_max=[3]", "--set", "repetitions=1",
                 "--quiet", "--out", tmp_path / "r", env=env, cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    replay.log.clear()
    again = invoke("tune", CI, *ONE_PROMPT, "--budget", "1", "--max-draft", "3", "--out", tmp_path / "t2",
                   env=env, cwd=tmp_path)  # fmt: skip
    assert again.returncode != 0 and "Traceback" not in again.stderr
    assert "--budget 1 is too small" in again.stderr
    assert "this machine's history puts the probe, the cheapest calibration and one round at" in again.stderr
    assert not (tmp_path / "t2").exists() and not replay.log, "refused up front: no folder, nothing run"


def test_run_reports_the_model_from_a_calibration_cached_for_its_pair(tmp_path, replay):
    """A calibration in the cache for this build, these models, threads and about this KV depth gives
    `run` and `report` the model column, and the row says which calibration it is."""
    from specbench.results.calibration import PassCosts
    from specbench.tune.calibrate import CachedCosts, store
    from tests.fixtures.replay import RECORDED_RUN, recorded_build

    at = "2026-11-23T09:30:00"
    build = recorded_build(None, None, replay.bin_dir)
    models = load_manifest(RECORDED_RUN).models
    for name, decode in (("smol_f32", 0.02), ("smol_q4", 0.008)):
        pass_s = {k: decode * (1 + 0.1 * (k - 1)) for k in (1, 2, 3, 5, 9)}
        for depth in (20, 25, 31, 39, 49, 61, 76, 95, 119, 149, 186):  # one within 25% of the run's
            store(CachedCosts(build=build.key, sha256=models[name].sha256, threads=2, ngl=0, depth=depth,
                              repetitions=2, measured_at=at,
                              costs=PassCosts(model=name, decode_s=decode, pass_s=pass_s)))  # fmt: skip
    run_dir = tmp_path / "run"
    result = invoke("run", CI, *ONE_PROMPT, "--set", "repetitions=1", "--set", "sweep.draft_max=[4]",
                    "--set", "generation.n_predict=16", "--out", run_dir, "--quiet", env={"COLUMNS": "200"},
                    cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "model" in result.stdout  # the closing table's model column
    cal = load_calibration(run_dir)
    assert cal is not None and cal.source == "cache" and cal.measured_at == at
    rows = json.loads(invoke("report", run_dir, "--format", "json", cwd=tmp_path).stdout)
    [row] = [r for r in rows if r["method"] == "draft"]
    assert row["model_speedup"] is not None and row["model_speedup"] > 0
    assert (
        "2026-11-23 09:30" in row["model_calibration"]
        and "from the calibration cache" in row["model_calibration"]
    )


def test_a_tune_that_measured_nothing_exits_non_zero_before_calibrating(tmp_path, replay):
    """Every probe sample fails (llama.cpp exits 1 each time): one line, exit 1, no calibration."""
    replay.script = lambda inv, n: Take(exit_code=1)
    run_dir = tmp_path / "tuned"
    result = invoke("tune", CI, *ONE_PROMPT, "--budget", "60", "--max-draft", "3", "--json", "--out", run_dir,
                    cwd=tmp_path)  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "tune's probe measured no speedup" in last
    assert str(run_dir / "samples.jsonl") in last and "samples failed, timed out or never speculated" in last
    assert result.stdout == "" and not (run_dir / "calibration.json").exists() and not replay.bench_log
    assert load_samples(run_dir) and all(not s.valid for s in load_samples(run_dir))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_during_tune_records_the_run_and_says_what_was_kept(tmp_path, replay, sig):
    """SIGTERM/SIGHUP (raised where Ctrl-C would be: tests/base/test_interrupts.py sends the real
    signals) as the probe's second run starts: exit 128 + the signal, one line saying what was kept,
    the manifest says interrupted and why, after the noise check ran."""
    replay.script = lambda inv, n: Take(stop=Terminated(sig.name, sig)) if n == 1 else Take()
    run_dir = tmp_path / "tuned"
    r = invoke("tune", CI, *ONE_PROMPT, "--budget", "600", "--max-draft", "3", "--out", run_dir, cwd=tmp_path)
    assert r.returncode == 128 + sig and "Traceback" not in r.stderr, r.stderr
    [line] = [ln for ln in r.stderr.splitlines() if ln.startswith("interrupted")]
    assert line.startswith(f"interrupted ({sig.name}): 1 sample kept") and str(run_dir) in line
    man = load_manifest(run_dir)
    assert man.status == "interrupted" and man.status_reason == sig.name
    assert man.noise.snapshots, "tune ran no noise check"


def test_tune_on_a_busy_machine_warns_records_it_caches_no_calibration_and_searches_every_family(
    tmp_path, replay
):
    """Another benchmark the whole time, and a sweep of two draft_min and two p_min: the warning, no
    calibration cached (tune still uses its own), each family's probe at draft_max 4."""
    replay.foreign = ["llama-server -m other.gguf"]
    sweep = [
        "--set",
        "sweep.draft_max=[4]",
        "--set",
        "sweep.draft_min=[0,2]",
        "--set",
        "sweep.p_min=[0.0,0.6]",
    ]
    r = invoke("tune", CI, *ONE_PROMPT, *sweep, "--budget", "900", "--max-draft", "4", "--json",
               "--out", tmp_path / "t", cwd=tmp_path)  # fmt: skip
    check_busy_tune(r, tmp_path / "t")


def test_tune_on_the_server_runner_measures_with_servers_and_prints_the_command_its_rounds_ran(
    tmp_path, replay
):
    """`--set runner=server`: every round goes to a (replayed) llama-server, and the printed server
    command is the command the winning setting's servers ran, less the runner's own options (port,
    slots, metrics): a command the real server runner runs (tests/execute/test_server.py's shared
    run) runs as printed."""
    run_dir = tmp_path / "tuned"
    result = invoke("tune", CI, *ONE_PROMPT, "--set", "runner=server", "--set", "generation.n_predict=32",
                    "--pair", "smol", "--budget", "900", "--max-draft", "3", "--format", "json",
                    "--out", run_dir, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out["best"]) == BEST_KEYS and out["speedup"] is not None
    samples = load_samples(run_dir)
    assert samples and all(s.runner == "server" and s.status == "ok" for s in samples), [
        (s.status, s.invalid_reason) for s in samples if s.status != "ok"
    ]
    assert list(run_dir.glob("raw/*-server.stderr")) and replay.server.starts and not replay.log
    g = out["best"]["draft_max"]
    printed = shlex.split(out["server_command"])
    ran = [s.cmd for s in samples if s.role == "speculative" and s.draft_max == g]
    assert ran and all(_without_runners_options(cmd) == printed for cmd in ran)
    assert "llama-speculative-simple" in out["command"] and f" {g} " in out["command"]


RUNNERS_OPTIONS = {"-np": 1, "--cache-ram": 1, "--metrics": 0, "--host": 1, "--port": 1}  # and their values


def _without_runners_options(argv: list[str]) -> list[str]:
    out, skip = [], 0
    for arg in argv:
        if skip:
            skip -= 1
        elif arg in RUNNERS_OPTIONS:
            skip = RUNNERS_OPTIONS[arg]
        else:
            out.append(arg)
    return out

"""`specbench tune` under signals, a busy machine and a budget too small; `run` reusing tune's cache.
Real llama.cpp runs of the 135M pair, 16 tokens each (issue 24)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from specbench.results.calibration import PassCosts, load_calibration
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from specbench.tune.calibrate import CachedCosts, store
from tests.fixtures.build import assert_one_line_error, cli
from tests.helpers.procs import processes_with, wait_for
from tests.helpers.realruns import one_cell, threads, write_config
from tests.helpers.tunes import check_busy_tune

pytestmark = pytest.mark.slow


def marked(tmp: Path, f32, q4) -> tuple[Path, str]:
    """The tiny tune config with a marker in its prompt, to find its llama.cpp processes by."""
    marker = f"specbench-{uuid.uuid4().hex[:12]}"
    prompts = tmp / "prompts.jsonl"
    ask = f"({marker}) Write a Python function that returns the sum of a list of numbers."
    prompts.write_text(json.dumps({"id": "sum", "category": "code", "text": ask}) + "\n")
    config = write_config(
        tmp / "tiny.yaml", name="tiny",
        models={"f32": {"path": str(f32.path)}, "q4": {"path": str(q4.path)}},
        pairs={"smol": {"target": "f32", "draft": "q4"}}, prompts={"file": str(prompts)},
        generation={"n_predict": 16, "threads": threads()}, warmup=0, timeout_s=300,
    )  # fmt: skip
    return config, marker


# integration tier; its rule, replayed: tests/cli/test_tune_replay.py (docs/development.md's table)
@pytest.mark.integration
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_during_tune_kills_llama_records_the_run_and_says_what_was_kept(
    tmp_path, llama_build, smol_f32, smol_q4, sig
):
    config, marker = marked(tmp_path, smol_f32, smol_q4)
    run_dir = tmp_path / "tuned"
    proc = subprocess.Popen(
        [sys.executable, "-m", "specbench", "tune", str(config), "--budget", "600", "--max-draft", "3",
         "--out", str(run_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        samples = run_dir / "samples.jsonl"
        first = lambda: samples.is_file() and samples.read_text().count("\n") >= 1  # noqa: E731
        assert wait_for(lambda: (first() and processes_with(marker)) or proc.poll() is not None, 300)
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(sig)  # a llama.cpp run of the probe is in flight
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    [line] = [ln for ln in err.splitlines() if ln.startswith("interrupted")]
    kept = len(load_samples(run_dir))
    noun = "sample" if kept == 1 else "samples"
    assert line.startswith(f"interrupted ({sig.name}): {kept} {noun} kept") and str(run_dir) in line
    assert wait_for(lambda: not processes_with(marker), 10), "llama.cpp outlived tune"
    man = load_manifest(run_dir)
    assert man.status == "interrupted" and man.status_reason == sig.name
    assert man.noise.snapshots, "tune ran no noise check"


# integration tier; its rule, replayed: tests/cli/test_tune_replay.py (docs/development.md's table)
@pytest.mark.integration
def test_tune_on_a_busy_machine_warns_records_it_caches_no_calibration_and_searches_every_family(
    tmp_path, llama_build, smol_f32, smol_q4
):
    """One tune, two checks: the busy machine (another benchmark the whole time) and the search over
    every draft_min and p_min of the config's sweep (each family's probe at draft_max 4, its own fit)."""
    from tests.helpers.procs import start_foreign, stop

    config, _ = marked(tmp_path, smol_f32, smol_q4)
    data = yaml.safe_load(config.read_text())
    data["sweep"] = {"method": ["draft"], "draft_max": [4], "draft_min": [0, 2], "p_min": [0.0, 0.6]}
    config.write_text(yaml.safe_dump(data))
    foreign = start_foreign("llama-server", seconds=600)  # another benchmark, for the whole tune
    try:
        result = cli("tune", str(config), "--budget", "900", "--max-draft", "4", "--json",
                     "--out", str(tmp_path / "t"), timeout=1800)  # fmt: skip
    finally:
        stop(foreign)
    check_busy_tune(result, tmp_path / "t")


# integration tier; its rule, replayed: tests/cli/test_tune_replay.py (a test of the same name)
@pytest.mark.integration
def test_a_budget_below_the_minimum_is_refused_with_the_minimum(tmp_path, llama_build, smol_f32, smol_q4):
    config, _ = marked(tmp_path, smol_f32, smol_q4)
    t0 = time.monotonic()
    env = {"SPECBENCH_RESULTS": str(tmp_path / "results")}  # no history: refused after the first prompt
    result = cli(
        "tune", str(config), "--budget", "1", "--max-draft", "3", "--out", str(tmp_path / "t"), env=env
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "--budget 1 is too small for this config here" in line
    least = int(line.split("give --budget ")[1].split()[0])
    assert least > 1
    assert not (tmp_path / "t" / "calibration.json").exists()  # refused before calibrating
    assert load_manifest(tmp_path / "t").status == "failed"
    assert time.monotonic() - t0 < 600
    # once this machine's history has the probe's cells, the same budget is refused before any warmup
    ran = cli("run", str(config), "--set", "sweep.draft_max=[3]", "--set", "repetitions=1", "--quiet",
              "--out", str(tmp_path / "r"), env=env)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    again = cli(
        "tune", str(config), "--budget", "1", "--max-draft", "3", "--out", str(tmp_path / "t2"), env=env
    )
    assert_one_line_error(
        again,
        "--budget 1 is too small",
        "this machine's history puts the probe, the cheapest calibration and one round at",
    )
    assert not (tmp_path / "t2").exists(), "refused up front: no folder"


# integration tier; its rule, replayed: tests/cli/test_tune_replay.py (a test of the same name)
@pytest.mark.integration
def test_run_reports_the_model_from_a_calibration_cached_for_its_pair(
    tmp_path, llama_build, smol_f32, smol_q4
):
    """A calibration in the cache for this build, these models, threads and about this KV depth gives
    `run` and `report` the model column, and the row says which calibration it is."""
    at = "2026-11-23T09:30:00"
    for name, model, decode in (("f32", smol_f32, 0.02), ("q4", smol_q4, 0.008)):
        pass_s = {k: decode * (1 + 0.1 * (k - 1)) for k in (1, 2, 3, 5, 9)}
        for depth in (20, 25, 31, 39, 49, 61, 76, 95, 119, 149, 186):  # one within 25% of the run's
            store(CachedCosts(build=llama_build.key, sha256=model.sha256, threads=threads(), ngl=0,
                              depth=depth,                              repetitions=2, measured_at=at,
                              costs=PassCosts(model=name, decode_s=decode, pass_s=pass_s)))  # fmt: skip
    config = one_cell(tmp_path, smol_f32, smol_q4, repetitions=1, warmup=0, sweep={"draft_max": [4]},
                      generation={"n_predict": 16, "threads": threads()})  # fmt: skip
    run_dir = tmp_path / "run"
    result = cli("run", str(config), "--out", str(run_dir), "--quiet", env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "model" in result.stdout  # the closing table's model column
    cal = load_calibration(run_dir)
    assert cal is not None and cal.source == "cache" and cal.measured_at == at
    report = cli("report", str(run_dir), "--format", "json")
    rows = json.loads(report.stdout)
    [row] = [r for r in rows if r["method"] == "draft"]
    assert row["model_speedup"] is not None and row["model_speedup"] > 0
    assert (
        "2026-11-23 09:30" in row["model_calibration"]
        and "from the calibration cache" in row["model_calibration"]
    )
    text = cli("report", str(run_dir), env={"COLUMNS": "200"})
    assert "from the calibration cache" in text.stdout + text.stderr

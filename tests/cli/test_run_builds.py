"""`specbench run` with two builds, for real: two labels of the pinned build (an A/A run, no extra
build), SmolLM2, 16 tokens, one prompt, two repetitions; the process runner and the server runner.
Samples carry their build, come back to back in ABBA order, each build's speculative samples are
compared with its own baseline, and the manifest keeps every build."""

from __future__ import annotations

import json

import pytest

from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.fixtures.build import cli
from tests.helpers.interleaved import check_interleaved
from tests.helpers.realruns import one_cell, threads

pytestmark = pytest.mark.slow
AA = [{"label": "a", "backend": "cpu"}, {"label": "b", "backend": "cpu"}]


def run_aa(tmp_path, smol_target, smol_q4, *sets: str):
    config = one_cell(
        tmp_path,
        smol_target,
        smol_q4,
        generation={"n_predict": 16, "threads": threads()},
        llama_cpp=AA,
        warmup=0,  # what is interleaved is the measured samples; warmups are tested in test_runner.py
    )
    run_dir = tmp_path / "run"
    env = {"SPECBENCH_RESULTS": str(tmp_path)}
    result = cli("run", str(config), "--out", str(run_dir), *sets, env=env, timeout=1800)  # ~1 min when quiet
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir, load_samples(run_dir)


# integration tier; its rule, replayed: tests/execute/test_runner_replay.py (a test of the same name
# or docs/development.md's table)
@pytest.mark.integration
def test_two_builds_interleave_with_the_process_runner(tmp_path, llama_build, smol_target, smol_q4):
    run_dir, samples = run_aa(tmp_path, smol_target, smol_q4)
    check_interleaved(samples)
    man = load_manifest(run_dir)
    assert set(man.builds) == {"a", "b"} and man.builds["a"].key == man.builds["b"].key == llama_build.key
    # one per sample; a pair measured again (its process did not get its share of the CPU:
    # machine/contention.py) loads twice more
    assert man.model_loads == 12 + 2 * man.noise.reruns
    report = cli("report", str(run_dir), "--format", "json")
    assert report.returncode == 0, report.stderr
    rows = json.loads(report.stdout)
    assert sorted(r["build"] for r in rows) == ["a", "b"]  # a row per build: each with its own baseline
    gate = cli("compare", str(run_dir), "--format", "json")  # the paired gate on one multi-build run
    # the plumbing, not the verdict: two real pairs may agree by chance (a 2-pair t interval can then
    # exclude 5% either way; an A/A here once read spec_tps 0.895 [0.831, 0.962]), so what the gate
    # decides on 2 pairs is tested on stated numbers (tests/gate/test_paired.py)
    assert gate.returncode in (0, 1, 3), gate.stderr
    decisions = json.loads(gate.stdout)["decisions"]
    assert {d["metric"] for d in decisions} >= {"baseline_tps", "spec_tps"}
    assert {d["n_pairs"] for d in decisions if d["metric"] in ("baseline_tps", "spec_tps")} == {2}


# integration tier; its rule, replayed: tests/execute/test_server_replay.py (docs/development.md's table)
@pytest.mark.integration
def test_two_builds_interleave_with_the_server_runner(tmp_path, llama_build, smol_target, smol_q4):
    run_dir, samples = run_aa(tmp_path, smol_target, smol_q4, "--set", "runner=server")
    check_interleaved(samples, n=16)  # the server runner measures each baseline again after (A B A)
    assert {s.runner for s in samples} == {"server"}
    # one server per build, setting and repetition: baseline, speculative and draft-alone, 2 x 2 of each,
    # and the baseline again after the speculative servers (the A B A bracket, docs/sentinel.md)
    servers = sorted(p.name for p in (run_dir / "raw").glob("*-server.stderr"))
    assert len(servers) == 16, servers
    assert sum("-a-" in name for name in servers) == sum("-b-" in name for name in servers) == 8
    assert sum(s.role == "baseline-after" for s in samples) > 0
    assert load_manifest(run_dir).model_loads == 16

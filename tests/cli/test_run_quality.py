"""Measurement quality end to end: repetitions auto on a real tiny run, the warnings it earns, the
noise check in the manifest, and --strict refusing to run beside another llama.cpp process."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import yaml

from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.fixtures.build import assert_one_line_error, cli
from tests.helpers.procs import start_foreign
from tests.helpers.realruns import threads

pytestmark = pytest.mark.slow


def config(tmp: Path, q4, **extra) -> Path:
    """One n-gram cell on the Q4 model, one short prompt, 16 tokens: two invocations a repetition.
    The prompt repeats itself and ngram_size_n/m are small, so the lookup drafts within 16 tokens
    (at llama.cpp's 12/48 it would need 61 tokens of history first)."""
    line = {"id": "count", "category": "code", "text": "1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2,"}
    (tmp / "prompts.jsonl").write_text(json.dumps(line) + "\n")
    data = dict(
        name="quality", models={"q4": {"path": str(q4.path)}},
        pairs={"ng": {"target": "q4", "method": "ngram-simple"}}, prompts={"file": "prompts.jsonl"},
        sweep={"ngram_size_n": [2], "ngram_size_m": [4]},
        generation={"n_predict": 16, "threads": threads()}, warmup=0, timeout_s=300, sentinel=False, **extra,
    )  # fmt: skip
    path = tmp / "quality.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def foreign_llama():
    pid = start_foreign("llama-server", seconds=600)
    yield pid
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_strict_refuses_beside_another_llama_process(tmp_path, llama_build, smol_q4, foreign_llama):
    run_dir = tmp_path / "run"
    result = cli("run", str(config(tmp_path, smol_q4, repetitions=1)), "--out", str(run_dir), "--strict")
    last = assert_one_line_error(result, "busy machine", "another benchmark is running", "--strict")
    assert f"pid {foreign_llama}" in result.stderr or "and" in last  # ours, or others' listed first
    assert not run_dir.exists()  # refused before anything was written


# integration tier; its rule, replayed: tests/execute/test_runner_replay.py (a test of the same name
# or docs/development.md's table)
@pytest.mark.integration
def test_auto_repetitions_stop_at_the_maximum_and_say_so(tmp_path, llama_build, smol_q4, foreign_llama):
    """Precision 0.0001 cannot be met: every cell runs max_repetitions and is marked; 16 tokens
    decode in far less than min_decode_s; the noise check saw the foreign llama-server and warned."""
    run_dir = tmp_path / "run"
    cfg = config(
        tmp_path, smol_q4, repetitions="auto", precision=0.0001, min_repetitions=2, max_repetitions=3,
        min_decode_s=600,  # 16 tokens take well under a second normally; a loaded 2-core machine needs this
    )  # fmt: skip
    result = cli("run", str(cfg), "--out", str(run_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    samples = load_samples(run_dir)
    spec = [s for s in samples if s.role == "speculative"]
    assert all(s.ngram_size_n == 2 and s.ngram_size_m == 4 for s in spec)
    assert "--spec-ngram-simple-size-n" in spec[0].cmd and spec[0].metrics.n_drafted > 0
    assert sorted((s.role, s.repetition) for s in samples) == [
        ("baseline", 0), ("baseline", 1), ("baseline", 2),
        ("speculative", 0), ("speculative", 1), ("speculative", 2),
    ]  # fmt: skip
    # the round of repetition 3 ran baseline before its speculative cell, as round 1 did
    order = [(s.repetition, s.role) for s in samples]
    assert order.index((2, "baseline")) < order.index((2, "speculative"))
    manifest = load_manifest(run_dir)
    assert manifest.status == "complete" and manifest.n_samples_planned == 6
    phases = [s.phase for s in manifest.noise.snapshots]
    assert phases[0] == "before" and phases[-1] == "after"
    assert any(p.command.startswith("llama-server") for p in manifest.noise.snapshots[0].concurrent)
    assert any("another benchmark is running" in b for b in manifest.noise.busy)
    assert "WARNING: busy machine: another benchmark is running" in result.stderr
    assert "short decode window" in result.stderr and "n_predict" in result.stderr
    assert "†" in result.stdout  # the table marks the cell

    report = cli("report", str(run_dir), "--format", "json")
    assert report.returncode == 0, report.stderr[-2000:]
    (row,) = json.loads(report.stdout)
    assert row["precision_met"] is False
    if row["spec_tps_rel_ci"] is not None:
        assert row["spec_tps_rel_ci"] > 0.0001
    warnings = " | ".join(row["warnings"])
    assert "short decode window" in warnings and "busy machine" in warnings and "imprecise" in warnings

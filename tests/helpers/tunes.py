"""What a finished ``specbench tune`` must show, checked alike on its replayed runs
(tests/cli/test_tune_replay.py) and its real ones (tests/cli/test_tune.py, test_tune_faults.py)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from specbench.results.calibration import load_calibration
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.helpers.runs import run_count

KEYS = {"pair", "best", "speedup", "speedup_ci_low", "speedup_ci_high", "predicted_speedup", "command",
        "server_command", "candidates", "elapsed_s", "speedup_range_low", "speedup_range_high",
        "baseline_history", "standing"}  # fmt: skip
BEST_KEYS = {"method", "draft_max", "draft_min", "p_min", "ngl", "ngld"}


def check_tune_contract(
    out: dict, run_dir: Path, history: Path, report: subprocess.CompletedProcess, models: Sequence[str]
) -> list[dict]:
    """The JSON of a ``tune --pair smol --max-draft 3 --format json`` run after one sweep of the same
    pair recorded in ``history``, its run folder and ``report --format json`` of it; ``models``: what
    both printed commands must name (the model files). Returns the measured candidates."""
    assert set(out) == KEYS
    # tune is recorded in history beside the sweep, whose baseline is the same command at another time
    assert run_count(history) == 2
    known = out["baseline_history"]
    assert known["runs"] == 1 and known["low_tps"] == known["high_tps"] > 0 and known["tune_tps"] > 0
    assert out["pair"] == "smol" and set(out["best"]) == BEST_KEYS and out["best"]["method"] == "draft"
    assert [c["settings"]["draft_max"] for c in out["candidates"]] == [1, 2, 3]
    assert all(c["model_speedup"] is not None and c["model_speedup"] > 0 for c in out["candidates"])
    measured = [c for c in out["candidates"] if c["speedup"] is not None]
    assert measured and any(c["settings"] == out["best"] and c["speedup"] == out["speedup"] for c in measured)
    g = str(out["best"]["draft_max"])
    for cmd, binary in (
        (out["command"], "llama-speculative-simple"),
        (out["server_command"], "llama-server"),
    ):
        assert binary in cmd and all(m in cmd for m in models) and f" {g} " in cmd, (binary, cmd)
    assert (run_dir / "calibration.json").is_file()
    assert report.returncode == 0, report.stderr
    rows = json.loads(report.stdout)
    assert rows and all(r["method"] == "draft" and r["model_speedup"] is not None for r in rows)
    assert {r["draft_max"] for r in rows} == {c["settings"]["draft_max"] for c in measured}
    # every round measures the baseline again: each repetition a candidate ran in has its own baseline
    samples = load_samples(run_dir)
    spec_reps = {s.repetition for s in samples if s.role == "speculative"}
    assert {s.repetition for s in samples if s.role == "baseline"} == spec_reps
    assert len(spec_reps) >= 2, "a 900 s budget leaves room for more than the probe"
    return measured


def check_busy_tune(result: subprocess.CompletedProcess, run_dir: Path) -> None:
    """A ``tune --max-draft 4 --json`` of a sweep of draft_max [4], draft_min [0, 2] and p_min
    [0.0, 0.6] beside another benchmark the whole time: the warning, every family searched (each
    one's probe at draft_max 4), no calibration cached, and tune still used its own."""
    assert result.returncode == 0, result.stderr
    assert "WARNING: busy machine: another benchmark is running" in result.stderr
    by_family: dict = {}
    for c in json.loads(result.stdout)["candidates"]:
        s = c["settings"]
        assert s["draft_min"] <= s["draft_max"] and c["model_speedup"] is not None
        by_family.setdefault((s["draft_min"], s["p_min"]), []).append(c)
    assert set(by_family) == {(0, 0.0), (0, 0.6), (2, 0.0), (2, 0.6)}
    for family, cands in by_family.items():
        assert any(c["settings"]["draft_max"] == 4 and c["speedup"] is not None for c in cands), family
    assert "note: calibration not cached: the machine was busy while it was measured" in result.stderr
    assert not list(Path(os.environ["SPECBENCH_CALIBRATION"]).glob("*.json"))
    man = load_manifest(run_dir)
    assert man.noise.busy and len(man.noise.snapshots) >= 3  # before, around calibration, after
    assert load_calibration(run_dir) is not None  # tune itself still used its measurement

"""The speed sentinel and the server runner's bracket on a real run whose machine gets slower
halfway through: CPU-spinning processes of the test's own (bounded in time, two per core) start
when the first speculative sample is recorded, inside the first setting group, and run to the end.
The run must warn that the machine's speed moved, by how much, and mark the cells whose baseline
windows straddle the change. Timing-robust: on a quiet machine the spinners (three per core) take
three quarters of every core, a slowdown far beyond the 3% precision; on a machine others load
too, the move is smaller and its sign is theirs as much as ours, so the assertions ask for a
warning and a mark, not a number or a direction.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from specbench.machine.noise import NoiseRecord, NoiseWatch
from specbench.machine.speed import SpeedMoved, SpeedReading, SpeedRecord
from specbench.results.folder import samples_path
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.helpers.realruns import prompts_file

SPIN_S = 400  # the spinners' own bound: they end by themselves even if the test dies
# the sentinel's series, or the bracket's two baseline windows: either is the warning
MOVED = re.compile(
    r"machine speed moved by ([+-]\d+)% (?:during the run|between the baseline windows of [^(]+) "
    r"\(from ([\d.]+) to ([\d.]+) t/s\)"
)


def test_strict_turns_a_moved_speed_into_an_error(tmp_path):
    """--strict: the watch raises as soon as the record holds a move beyond the precision."""
    record = NoiseRecord()
    watch = NoiseWatch(record, strict=True)
    watch.raise_if_moved()  # steady: nothing
    record.speed = SpeedRecord(warnings=["machine speed moved by -30% during the run (from 40 to 28)"])
    with pytest.raises(SpeedMoved, match="moved by -30%.*--strict refuses"):
        watch.raise_if_moved()
    NoiseWatch(record, strict=False).raise_if_moved()  # without --strict: a warning only


def _spinners(n: int) -> list[subprocess.Popen]:
    code = f"import time\nend = time.time() + {SPIN_S}\nwhile time.time() < end:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


def _first_speculative(run_dir: Path) -> bool:
    path = samples_path(run_dir)
    return path.is_file() and '"role":"speculative"' in path.read_text().replace(" ", "")


@pytest.mark.slow
@pytest.mark.perf  # a real slowdown to see (make test-perf); the rules: test_speed.py, test_bracket_mark.py
def test_a_slowed_phase_warns_and_marks_the_cells_across_it(tmp_path, llama_build, smol_f32, smol_q4):
    data = dict(
        name="phase", runner="server",
        models={"f32": {"path": str(smol_f32.path)}, "q4": {"path": str(smol_q4.path)}},
        pairs={"smol": {"target": "f32", "draft": "q4"}}, prompts={"file": str(prompts_file(tmp_path))},
        sweep={"draft_max": [8], "parallel": [1]},  # one thread: a shared machine slows it less unevenly
        generation={"n_predict": 32, "threads": 1, "ctx_size": 512}, repetitions=1, warmup=1, timeout_s=600,
    )  # fmt: skip
    config = tmp_path / "phase.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    run_dir = tmp_path / "results" / "run"
    env = {**os.environ, "SPECBENCH_RESULTS": str(tmp_path / "results")}
    cmd = [sys.executable, "-m", "specbench", "run", str(config), "--out", str(run_dir), "--quiet"]
    run = subprocess.Popen(
        cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    spinners: list[subprocess.Popen] = []
    try:
        deadline = time.monotonic() + 900
        while run.poll() is None and not _first_speculative(run_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert run.poll() is None, "the run ended before its speculative servers: nothing was slowed"
        spinners = _spinners(3 * (os.cpu_count() or 2))
        out, err = run.communicate(timeout=1500)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, err[-3000:]
    # 1. the sentinel (start quiet, end slowed) or the bracket -> the run warns, with numbers
    found = MOVED.search(err)
    assert found, err[-3000:]
    move, start, end = int(found.group(1)), float(found.group(2)), float(found.group(3))
    assert move != 0 and end != start
    speed = load_manifest(run_dir).noise.speed
    assert speed.readings[0].phase == "before" and speed.readings[-1].phase == "after"
    assert speed.moved is not None and abs(speed.moved) > speed.precision and speed.warnings
    # 2. the bracket: where the group's baseline windows straddle the change, its cells are marked
    # (the spinners start at the first speculative sample; how much of the after-window they slow is
    # the scheduler's affair, so the mark is checked where the windows did move)
    (window,) = speed.windows
    marked = abs(window.moved) > speed.precision
    report = subprocess.run(
        [sys.executable, "-m", "specbench", "report", str(run_dir), "--format", "json", "--out",
         str(tmp_path / "rep")], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr[-2000:]
    rows = [r for r in json.loads(report.stdout) if r["category"] == "all"]
    assert len(rows) == 1
    for r in rows:
        assert marked == any(w.startswith("speed moved: the baseline moved ") for w in r["warnings"]), (
            window,
            r["warnings"],
        )
        assert r["baseline_window"] in ("before", "after")
    samples = load_samples(run_dir)
    assert {s.role for s in samples} == {"baseline", "baseline-after", "speculative", "draft"}
    # the report's plot of the series
    assert (tmp_path / "rep" / "machine_speed.png").is_file()


def test_a_reading_record_survives_the_manifest(tmp_path):
    """The series is stored in the manifest's noise record and read back by RunFacts."""
    from specbench.results.manifest import facts_from_manifest

    record = SpeedRecord(reference="f32 alone", readings=[SpeedReading(phase="before", at="t", tps=40.0)])
    facts = facts_from_manifest({"noise": {"speed": record.model_dump()}}, "r")
    assert facts.speed.series() == [("t", 40.0)]
    assert facts_from_manifest({"noise": {"speed": {"readings": "?"}}}, "r").speed == SpeedRecord()

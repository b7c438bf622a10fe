"""benchmarks/bench_noisy.py --tally: the tries of saved runs counted as one check (its measuring
form needs a quiet machine and an hour; this is the part that turns saved tries into the docs' counts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_noisy.py"
RECORDED = ROOT / "benchmarks" / "results" / "noisy2-part1.json"


def _tally(*files: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--tally", *map(str, files)],
        capture_output=True, text=True, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip


def test_two_parts_of_one_check_are_counted_together(tmp_path):
    data = json.loads(RECORDED.read_text())
    second = dict(data, tries=[dict(t, right=False, exit=3) for t in data["tries"][:2]], check=None)
    (tmp_path / "b.json").write_text(json.dumps(second))
    proc = _tally(RECORDED, tmp_path / "b.json")
    assert proc.returncode == 0, proc.stderr
    counts = proc.stdout.strip().splitlines()[-2:]
    right = {p: sum(t["right"] for t in data["tries"] if t["part"] == p) for p in ("aa", "slow")}
    n = {p: sum(t["part"] == p for t in data["tries"] + second["tries"]) for p in ("aa", "slow")}
    assert counts[0].startswith(f"aa: right in {right['aa']} of {n['aa']} tries")
    assert counts[1].startswith(f"slow: right in {right['slow']} of {n['slow']} tries")
    assert "[" in proc.stdout.splitlines()[0]  # each decision with its interval


def test_runs_of_another_slow_build_are_not_one_check(tmp_path):
    data = json.loads(RECORDED.read_text())
    (tmp_path / "b.json").write_text(json.dumps(dict(data, delay_us=data["delay_us"] + 1)))
    proc = _tally(RECORDED, tmp_path / "b.json")
    assert proc.returncode != 0 and "delay_us differ" in proc.stderr and "Traceback" not in proc.stderr

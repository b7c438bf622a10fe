"""benchmarks/bench_pairs.py in its smoke form (2 pairs of a stand-in binary, quiet and with the
noise generator: it runs and prints one table; its numbers mean nothing). Its duet pairs run through
``ab``'s DuetExecutor, whose pinning is tested in tests/execute/test_duet.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from specbench.plan.pairing import cpu_halves

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_pairs.py"
FAKEBINS = ROOT / "tests" / "fakebins"


def test_the_smoke_form_prints_one_table_of_every_kind_and_noise(tmp_path):
    out = tmp_path / "pairs.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--stand-in", str(FAKEBINS / "plain"), "--pairs", "2",
         "--burst", "0.05-0.1", "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    header, *rows = proc.stdout.strip().splitlines()
    assert header.split()[:4] == ["kind", "noise", "pairs", "sd"]
    kinds = ["sequential", "duet"] if cpu_halves() else ["sequential"]
    assert [r.split()[:3] for r in rows] == [[k, n, "2"] for n in ("quiet", "noisy") for k in kinds]
    assert "server left out" in proc.stderr  # a stand-in is a process only
    data = json.loads(out.read_text())
    for s in data["summaries"]:
        assert s["pairs"] == 2 and s["failed"] == 0 and s["sd_log_ratio"] is not None
        assert s["cpu_share_median"] is not None  # the stand-in sleeps: a low share, as contention flags
    assert all(len(rows) == 2 for rows in data["pairs"].values())


def test_a_bad_option_is_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--stand-in", str(FAKEBINS / "plain"), "--kinds", "abba"],
        capture_output=True, text=True, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and "choose from sequential, duet, server" in proc.stderr
    assert "Traceback" not in proc.stderr

"""benchmarks/bench_pairs.py in its smoke form (2 pairs of a stand-in binary, quiet and with the
noise generator: it runs and prints one table; its numbers mean nothing), and the duet's pinning
(a process started from a pinned thread runs on that thread's CPUs only)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_pairs.py"
FAKEBINS = ROOT / "tests" / "fakebins"


def _module():
    spec = importlib.util.spec_from_file_location("bench_pairs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    kinds = ["sequential", "duet"] if _module().halves() else ["sequential"]
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


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2, reason="2 CPUs")
def test_a_duet_side_runs_on_its_own_cpus():
    bench = _module()
    a_cpus, b_cpus = bench.halves()
    assert a_cpus and b_cpus and not a_cpus & b_cpus
    code = "import os; print(sorted(os.sched_getaffinity(0)))"
    out: list = [None, None]

    def child():
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip()

    for slot, cpus in enumerate((a_cpus, b_cpus)):
        bench.pinned(cpus, child, out, slot).join()
    assert out == [str(sorted(a_cpus)), str(sorted(b_cpus))]

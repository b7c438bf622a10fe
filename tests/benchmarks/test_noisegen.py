"""The noise generator (benchmarks/noisegen.py): bounded (its time limit, its harness's end, its
parent's end) and loading the CPU at the duty cycle it was given, measured from its own CPU time
against its wall time."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchmarks.noisegen import NoiseGenerator, NoiseSpec

ROOT = Path(__file__).resolve().parents[2]
SHORT = (0.05, 0.15)  # CPU seconds a burst: many bursts in a short test


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_it_stops_at_its_time_limit():
    gen = NoiseGenerator(NoiseSpec(duty=0.5, burst_s=SHORT, limit_s=0.5, threads=2, seed=1)).start()
    try:
        assert gen.wait(timeout_s=60), "the workers outlived their 0.5 s limit"
    finally:
        gen.stop()
    assert [s.exit_code for s in gen.stats] == [0, 0]  # ended by themselves, not killed


def test_the_harness_stops_it_when_the_block_ends():
    with NoiseGenerator(NoiseSpec(duty=0.5, burst_s=SHORT, limit_s=600)) as gen:
        pids = [w.proc.pid for w in gen._workers]
        assert gen.running() == 1
    assert gen.running() == 0
    assert gen.stats[0].exit_code is not None and gen.stats[0].exit_code < 0  # killed by a signal
    assert all(_gone(pid, 1.0) for pid in pids)


def test_ctrl_c_in_the_harness_stops_it():
    with pytest.raises(KeyboardInterrupt), NoiseGenerator(NoiseSpec(limit_s=600)) as gen:
        raise KeyboardInterrupt
    assert gen.running() == 0 and len(gen.stats) == 1


def test_it_never_outlives_its_parent(tmp_path):
    """A harness killed outright (SIGKILL: no clean-up runs) still leaves no worker behind."""
    script = textwrap.dedent("""
        import sys, time
        from benchmarks.noisegen import NoiseGenerator, NoiseSpec
        gen = NoiseGenerator(NoiseSpec(duty=0.5, burst_s=(0.05, 0.1), limit_s=600)).start()
        print(gen._workers[0].proc.pid, flush=True)
        time.sleep(600)
    """)
    harness = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        worker = int(harness.stdout.readline())
        harness.kill()
        harness.wait()
        assert _gone(worker, 10.0), "the worker outlived its killed parent"
    finally:
        harness.kill()
        harness.wait()


def test_its_duty_cycle_is_the_one_it_was_given():
    """Over 2 s of short bursts its CPU time (the OS's count, os.wait4) over its wall time is the
    set duty within 0.1: the sleeps are sized from its own CPU time, so a busy machine stretches
    bursts without changing the share."""
    gen = NoiseGenerator(NoiseSpec(duty=0.3, burst_s=SHORT, limit_s=2.0, seed=7)).start()
    try:
        gen.wait(timeout_s=60)
    finally:
        gen.stop()
    duty = gen.duty()
    assert duty is not None
    assert abs(duty - 0.3) < 0.1, f"measured duty {duty:.3f} (load {os.getloadavg()[0]:.1f})"


@pytest.mark.parametrize(
    ("spec", "word"),
    [
        (NoiseSpec(duty=0), "duty"),
        (NoiseSpec(duty=1.5), "duty"),
        (NoiseSpec(burst_s=(5, 1)), "burst"),
        (NoiseSpec(limit_s=0), "limit"),
        (NoiseSpec(threads=0), "threads"),
    ],
)
def test_a_bad_spec_is_one_line_naming_it(spec, word):
    with pytest.raises(ValueError, match=word):
        NoiseGenerator(spec)

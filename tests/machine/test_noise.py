"""The system-noise check: real processes on this machine, read back from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from specbench.machine import noise
from tests.helpers.procs import start_foreign, stop

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["/x/build/bin/llama-server", "-m", "a.gguf"], True),
        (["llama-completion", "-p", "hi"], True),
        (["/opt/llama.cpp/main", "-m", "a"], True),
        (["/usr/bin/main"], False),
        (["/usr/bin/python3", "/v/.venv/bin/specbench", "run", "c.yaml"], True),
        (["/usr/bin/python3", "/v/.venv/bin/specbench", "--debug", "run", "c.yaml"], True),
        (["python3", "-m", "specbench", "run", "c.yaml"], True),
        (["python3", "-m", "specbench", "tune", "c.yaml"], True),
        (["python3", "-m", "specbench", "report"], False),
        (["/v/.venv/bin/specbench", "compare", "a", "b"], False),
        (["vim", "llama-server.log"], False),
        ([], False),
    ],
)
def test_what_counts_as_a_benchmark_process(argv, expected):
    assert noise.is_benchmark_process(argv) is expected


def test_a_foreign_llama_process_is_found_and_our_own_children_are_not():
    pid = start_foreign("llama-server")
    own = subprocess.Popen(["llama-completion", "60"], executable="/bin/sleep")
    try:
        time.sleep(0.3)
        found = {p.pid: p.command for p in noise.concurrent_processes()}
        assert found.get(pid, "").startswith("llama-server")
        assert own.pid not in found
        assert os.getpid() not in found
    finally:
        stop(pid)
        own.kill()
        own.wait()
    assert pid not in {p.pid for p in noise.concurrent_processes()}


def test_snapshot_and_judge_report_a_concurrent_benchmark():
    pid = start_foreign("llama-bench")
    try:
        time.sleep(0.3)
        snap = noise.snapshot("before", "now", idle=True)
    finally:
        stop(pid)
    assert snap.cpu_count >= 1 and snap.load_1m is not None
    assert snap.cpu_busy is not None and 0.0 <= snap.cpu_busy <= 1.0
    assert pid in {p.pid for p in snap.concurrent}
    busy = noise.judge(snap)
    assert any(b.startswith("another benchmark is running (pid ") for b in busy)  # others' may come first
    record = noise.NoiseRecord()
    assert noise.record(record, snap) == busy
    assert noise.record(record, snap) == []  # the same reasons are not repeated
    assert len(record.snapshots) == 2


def test_throttling_during_the_run_is_busy():
    before = noise.NoiseSnapshot(phase="before", at="t0", cpu_count=2, throttle_count=5)
    after = before.model_copy(update={"phase": "after", "throttle_count": 9})
    assert noise.judge(after, before) == ["the CPU was thermally throttled 4 times during the run"]
    assert noise.judge(before, before) == []


def test_governor_note():
    snap = noise.NoiseSnapshot(phase="before", at="t", cpu_count=2, governors=["powersave"])
    assert "powersave" in noise.governor_note(snap)
    assert noise.governor_note(snap.model_copy(update={"governors": ["performance"]})) is None


def test_python_running_specbench_run_is_detected(tmp_path):
    script = tmp_path / "specbench"
    script.write_text("import time\ntime.sleep(60)\n")
    out = subprocess.run(
        ["bash", "-c", f"({sys.executable} {script} run x.yaml) >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(out.stdout.strip())
    try:
        time.sleep(0.5)
        assert pid in {p.pid for p in noise.concurrent_processes()}
    finally:
        stop(pid)


def test_gpu_utilisation_counts_only_before_specbench_used_the_gpu():
    """nvidia-smi's utilisation is an average over its last sample window: right after the run it
    still holds specbench's own work (seen on an H100: 'GPU 0 at 54% busy' after a quiet run)."""
    hot = [noise.GpuLoad(index=0, utilization=90, memory_used_mb=1000)]
    before = noise.NoiseSnapshot(phase="before", at="t0", cpu_count=2, gpus=hot)
    after = noise.NoiseSnapshot(phase="after", at="t1", cpu_count=2, gpus=hot)
    assert noise.judge(before) == ["GPU 0 at 90% busy"]
    assert noise.judge(after, before) == []


STAT = b"""cpu  400 300 100 1000 0 0 0 0 0 0
cpu0 100 0 50 500 0 0 0 0 0 0
cpu1 300 300 50 500 0 0 0 0 0 0
intr 1 2 3
"""


def test_cpu_time_counts_only_our_cpus_and_niced_work_where_it_competes():
    """A benchmark pinned to cpu0 is not busy because cpu1 is. Niced work (cpu1's 300) is busy
    where the kernel groups tasks by session (it then competes), idle only where it yields."""
    assert noise.cpu_times(STAT, {0}) == (150, 650)
    assert noise.cpu_times(STAT, {1}) == (650, 1150)
    assert noise.cpu_times(STAT, None) == (800, 1800)
    assert noise.cpu_times(STAT, {1}, niced_idle=True) == (350, 1150)
    assert noise.cpu_times(STAT, None, niced_idle=True) == (500, 1800)


def test_niced_work_yields_only_without_autogroups():
    path = "/proc/sys/kernel/sched_autogroup_enabled"
    if not os.path.exists(path):
        assert noise.niced_work_yields()
    else:
        with open(path) as fh:
            assert noise.niced_work_yields() == (fh.read().strip() == "0")


def test_a_benchmark_on_other_cpus_does_not_compete():
    mine = noise.our_cpus()
    if mine is None or len(mine) < 2:
        pytest.skip("needs two CPUs to pin a process away from this one")
    ours, theirs = min(mine), max(mine)
    pid = start_foreign("llama-server")
    try:
        os.sched_setaffinity(pid, {theirs})
        os.sched_setaffinity(0, {ours})
        time.sleep(0.3)
        assert pid not in {p.pid for p in noise.concurrent_processes()}
        os.sched_setaffinity(0, mine)
        assert pid in {p.pid for p in noise.concurrent_processes()}
    finally:
        os.sched_setaffinity(0, mine)
        stop(pid)

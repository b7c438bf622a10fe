"""A sample whose process did not get its share of the CPU is measured again with its pair: the
rule on recorded numbers, the CPU time the runner measures (children that compute or sleep for a
set amount, never a timing of ours), and the runner with a stand-in that sleeps instead of
computing (tests/fakebins/idle: a low share on any machine)."""

from __future__ import annotations

import os
import sys
import time

from specbench.execute.judge import Outcome
from specbench.execute.process import process_cpu_s
from specbench.execute.runner import execute, starved
from specbench.machine.contention import MAX_RERUNS, MIN_CPU_SHARE, cpu_share
from specbench.results.manifestfile import load_manifest
from specbench.results.records import Generation
from specbench.results.samplelog import load_samples
from tests.helpers.fakeruns import FAKEBINS, inv, manifest, process
from tests.helpers.procs import run_one

ONE = Generation(n_predict=32, threads=1)  # one thread: the share does not depend on this machine's cores


def test_the_share_is_cpu_time_over_the_wall_time_of_its_threads():
    assert cpu_share(3.0, 4.0, 1) == 0.75
    assert (
        cpu_share(None, 4.0, 1) is None
        and cpu_share(1.0, 0.0, 1) is None
        and cpu_share(1.0, 4.0, None) is None
    )


def test_a_process_that_got_its_share_is_judged_one_that_did_not_is_not():
    i = inv("plain", role="baseline", generation=ONE)
    assert starved(i, Outcome(wall_s=4.0, cpu_s=3.8), "cpu") is None
    why = starved(i, Outcome(wall_s=4.0, cpu_s=1.2), "cpu")
    assert why is not None and "30% of 1 thread's CPU time over 4.0 s" in why
    assert f"under {MIN_CPU_SHARE:.0%}" in why


# Recorded on the shared 2-core VM, 2026-11-26, with others' work running: `benchmarks/bench_pairs.py
# --pairs 2 --noise quiet` on configs/ci.yaml (64 tokens of code-02): (kind, threads, CPU share, t/s).
RECORDED = [
    ("sequential", 2, 0.33, 3.0), ("sequential", 2, 0.34, 2.3), ("sequential", 2, 0.91, 25.4),
    ("sequential", 2, 0.62, 6.4), ("duet", 1, 0.54, 9.2), ("duet", 1, 0.47, 6.8), ("duet", 1, 0.91, 14.2),
    ("duet", 1, 0.95, 14.2), ("server", 2, 0.49, 7.4), ("server", 2, 0.49, 4.4), ("server", 2, 0.54, 2.4),
    ("server", 2, 0.95, 24.6),
]  # fmt: skip


def test_the_recorded_slowed_samples_are_flagged_and_the_full_speed_ones_are_not():
    """Full speed was about 25 t/s with 2 threads and 14 with 1; every sample far below it got under
    75% of its threads' time, every one at it over 90%."""
    full = {1: 14.2, 2: 24.6}
    for kind, threads, share, tps in RECORDED:
        wall = 3.0  # the share is what was recorded; the wall time only scales it
        flagged = starved(
            inv("plain", role="baseline", generation=ONE), Outcome(wall_s=wall, cpu_s=share * wall), "cpu"
        )
        assert (flagged is not None) == (tps < 0.9 * full[threads]), (kind, threads, share, tps)


def test_the_server_runner_is_judged_over_its_batch():
    """The server's CPU time is taken around a batch: its share is over the batch's wall time."""
    i = inv("plain", role="baseline", generation=ONE)
    assert starved(i, Outcome(wall_s=9.0, batch_wall_s=2.0, cpu_s=0.5), "cpu") is not None
    assert starved(i, Outcome(wall_s=0.4, batch_wall_s=2.0, cpu_s=1.9), "cpu") is None


def test_where_the_share_means_nothing_nothing_is_judged():
    low = Outcome(wall_s=4.0, cpu_s=0.1)
    assert starved(inv("plain", role="baseline", generation=ONE), low, "cuda") is None  # waits on the GPU
    assert starved(inv("plain", role="baseline"), low, "cpu") is None  # threads: llama.cpp's own choice
    assert starved(inv("plain", role="baseline", generation=ONE, warmup=True), low, "cpu") is None
    assert (
        starved(inv("plain", role="baseline", generation=ONE), Outcome(wall_s=0.3, cpu_s=0.0), "cpu") is None
    )
    failed = Outcome(wall_s=4.0, cpu_s=0.1, error="exit code 1")
    assert starved(inv("plain", role="baseline", generation=ONE), failed, "cpu") is None


def _child(code: str, tmp_path) -> float | None:
    res = run_one([sys.executable, "-c", code], tmp_path / "o", tmp_path / "e", timeout_s=60)
    assert res.exit_code == 0
    return res.cpu_s


def test_the_runner_measures_the_cpu_time_its_child_got(tmp_path):
    busy = "import time\nwhile time.process_time() < 0.4: pass"  # computes until it has had 0.4 s
    cpu = _child(busy, tmp_path)
    assert cpu is not None and cpu >= 0.4
    idle = _child("import time; time.sleep(0.6)", tmp_path)
    assert idle is not None and idle < 0.3  # interpreter start only


def test_a_running_process_cpu_time_rises_as_it_computes():
    before = process_cpu_s(os.getpid())
    end = time.process_time() + 0.1
    while time.process_time() < end:
        pass
    after = process_cpu_s(os.getpid())
    assert before is not None and after is not None and after - before >= 0.05  # clock ticks: 10 ms


def test_a_pair_whose_process_slept_is_measured_again_and_counted(tmp_path, env_info):
    """Two builds' runs of one baseline, each a stand-in that sleeps: the pair is measured again
    MAX_RERUNS times, the last kept; both samples say so, the manifest counts the re-runs, and the
    set-aside logs are kept beside the kept ones."""
    plan = [inv("idle", role="baseline", build=b, generation=ONE) for b in ("a", "b")]
    plan.append(
        inv("plain", role="baseline", prompt_id="p2", build="a", generation=ONE)
    )  # too short to judge
    run_dir = tmp_path / "run"
    execute(process(plan), run_dir, manifest(run_dir, env_info))
    samples = {(s.build, s.prompt_id): s for s in load_samples(run_dir)}
    assert len(samples) == 3
    for b in ("a", "b"):
        s = samples[(b, "p1")]
        assert s.status == "ok" and s.reruns == MAX_RERUNS and s.cpu_threads == 1
        share = cpu_share(s.cpu_s, s.wall_s, s.cpu_threads)  # the process runner's: over its wall time
        assert share is not None and share < MIN_CPU_SHARE
    assert samples[("a", "p2")].reruns == 0 and samples[("a", "p2")].cpu_s is not None
    noise = load_manifest(run_dir).noise
    assert noise.reruns == MAX_RERUNS and "something else had the CPU" in (noise.rerun_reason or "")
    assert any("re-runs of a pair" in n for n in noise.notes)
    assert any(snap.phase == "rerun" for snap in noise.snapshots)
    raw = sorted(p.name for p in (run_dir / "raw").iterdir())
    for n in range(1, MAX_RERUNS + 1):
        assert sum(name.endswith(f".stderr.rerun{n}") for name in raw) == 2  # both of the pair


def test_a_stand_in_that_sleeps_is_flagged_on_any_machine(tmp_path):
    """What the runner test relies on: sleeping takes no CPU time, however busy the machine."""
    res = run_one([str(FAKEBINS / "idle"), "-p", "x"], tmp_path / "o", tmp_path / "e", timeout_s=60)
    assert res.exit_code == 0 and res.cpu_s is not None and res.wall_s >= 0.5
    assert starved(inv("idle", role="baseline", generation=ONE), Outcome(wall_s=res.wall_s, cpu_s=res.cpu_s),
                   "cpu") is not None  # fmt: skip

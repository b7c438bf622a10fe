"""``pairing: duet`` in the runner: a pair's two builds run at the same time, each pinned to its own
half of the CPUs, which half alternating per cell with the repetition and the prompt; Ctrl-C kills
both. Stand-in binaries (tests/fakebins/whereabouts says where and when it ran); the same plan run
sequentially is the control that shows the checks can fail."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from specbench.execute.runner import RunInterrupted, execute
from specbench.plan.invocation import Plan
from specbench.plan.pairing import cpu_halves
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.helpers.fakeruns import inv, manifest
from tests.helpers.procs import gone

pytestmark = pytest.mark.skipif(cpu_halves() is None, reason="duet needs 2 CPUs and CPU affinity")


def _pairs_plan(binary: str, pairing: str, prompts=("p1", "p2"), reps=2, models=("target",)) -> Plan:
    """``reps`` repetitions of each prompt, and in each a baseline pair per model (two models: a
    repetition of 2 prompts is 4 pairs; configs/ci.yaml's baseline and speculative pairs are too)."""
    invocations = []
    for rep in range(reps):
        for prompt in prompts:
            order = ("a", "b") if rep % 2 == 0 else ("b", "a")  # ABBA, as make_plan orders builds
            for model in models:
                pair = [
                    inv(binary, role="baseline", prompt_id=prompt, rep=rep, build=b, model=model)
                    for b in order
                ]
                invocations += pair
    sets = [list(h) for h in cpu_halves()] if pairing == "duet" else []
    return Plan(runner="process", invocations=invocations, pairing=pairing, cpu_sets=sets)


def _cpus(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def _where(run_dir, sample) -> tuple[set[int], float, float]:
    line = next(
        x for x in (run_dir / sample.stderr_path).read_text().splitlines() if x.startswith("whereabouts:")
    )
    fields = dict(f.split("=") for f in line.split()[1:])
    return _cpus(fields["cpus"]), float(fields["start"]), float(fields["end"])


def _run(tmp_path, env_info, pairing: str, **plan):
    run_dir = tmp_path / pairing
    execute(_pairs_plan("whereabouts", pairing, **plan), run_dir, manifest(run_dir, env_info))
    samples = load_samples(run_dir)
    expected = 2 * len(plan.get("prompts", "pp")) * plan.get("reps", 2) * len(plan.get("models", "t"))
    assert len(samples) == expected
    assert all(s.status == "ok" for s in samples), [s.invalid_reason for s in samples]
    by_pair: dict[tuple, dict] = {}
    for s in samples:
        by_pair.setdefault((s.model, s.prompt_id, s.repetition), {})[s.build] = _where(run_dir, s)
    return run_dir, by_pair


def test_a_duet_pair_runs_both_builds_at_once_on_their_own_halves_alternated_per_cell(tmp_path, env_info):
    halves = [set(h) for h in cpu_halves()]
    models, prompts, reps = ("target", "spec"), ("p1", "p2"), 2
    run_dir, by_pair = _run(tmp_path, env_info, "duet", models=models, prompts=prompts, reps=reps)
    assert load_manifest(run_dir).pairing == "duet"
    for pair in by_pair.values():
        (cpus_a, start_a, end_a), (cpus_b, start_b, end_b) = pair["a"], pair["b"]
        assert start_a < end_b and start_b < end_a, "the pair's sides did not run at the same time"
        assert cpus_a in halves and cpus_b in halves and not cpus_a & cpus_b
    a_on = {key: halves.index(pair["a"][0]) for key, pair in by_pair.items()}
    for model in models:  # a repetition is 4 pairs: one counter over all pairs kept each cell's halves
        for prompt in prompts:
            sets = [a_on[model, prompt, rep] for rep in range(reps)]
            kept = any(x == y for x, y in zip(sets, sets[1:], strict=False))
            assert not kept, f"a kept a half in {model} {prompt}"
        for rep in range(reps):
            assert a_on[model, "p1", rep] != a_on[model, "p2", rep], "a had one half for every prompt"

    run_dir, by_pair = _run(tmp_path, env_info, "sequential")  # the control: one after the other, all CPUs
    assert load_manifest(run_dir).pairing == "sequential"
    for pair in by_pair.values():
        (cpus_a, start_a, end_a), (cpus_b, start_b, end_b) = pair["a"], pair["b"]
        assert end_a <= start_b or end_b <= start_a
        assert cpus_a == cpus_b == set(os.sched_getaffinity(0))


def test_ctrl_c_in_a_duet_pair_kills_both_sides(tmp_path, env_info):
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    run_dir = tmp_path / "run"
    plan = _pairs_plan("sleeper", "duet", prompts=("p1",), reps=1)
    for i in plan.invocations:
        i.timeout_s = 30.0
    timers = []

    def progress(event):
        if event.kind == "begin" and event.invocation.build == "b":
            timers.append(threading.Timer(0.7, os.kill, (os.getpid(), signal.SIGINT)))
            timers[-1].start()

    try:
        with pytest.raises(RunInterrupted):
            execute(plan, run_dir, manifest(run_dir, env_info), progress=progress)
    finally:
        signal.signal(signal.SIGINT, previous)
    partial = sorted(run_dir.glob("raw/*.stdout.partial"))
    assert len(partial) == 2, "both sides of the pair were in flight"
    for log in partial:
        for pid in (int(line.split()[1]) for line in log.read_text().splitlines()):
            assert gone(pid), f"Ctrl-C left {pid} of {log.name} running"

"""A sample measured while something else had the CPU is not judged: its pair is measured again.

The noise check (``specbench.builder.noise``) looks at the machine between samples; this looks at
each sample itself. For every process sample the runner records the CPU time its process got
(``os.wait4``), its wall time, the threads it was given and the machine's load average; for the
server runner, the server process's CPU time over each batch of requests (``/proc/PID/stat``). A
sample whose process got less than ``MIN_CPU_SHARE`` of its threads' time is measured again with
its pair (the other builds' runs of the same cell, prompt and repetition), at most ``MAX_RERUNS``
times; the count goes in the sample (``reruns``), the manifest (``noise.reruns``) and the report.

Judged only where the share means something: the run's builds compute on the CPU (backend
``cpu``: with a GPU the CPU threads wait for it), the config sets ``generation.threads`` (without
it llama.cpp picks its own count, one per physical core, which specbench does not know), and the
sample ran at least ``MIN_JUDGED_WALL_S`` (shorter, process start and model load are most of it).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from specbench.builder.envinfo import cpu_cores
from specbench.builder.noise import NoiseRecord

if TYPE_CHECKING:
    from specbench.execute.judge import Outcome
    from specbench.plan.invocation import Invocation
    from specbench.results.records import Sample

MIN_CPU_SHARE = 0.75
"""The least share of its threads' wall time a llama.cpp process gets on a machine it has to itself.

llama.cpp's CPU threads spin-wait between operations, so alone on its cores each thread is busy
nearly all of the process's wall time. When another process takes a core, the thread on it stops
and the others spin waiting for it at the next barrier: t/s falls far more than the CPU time does
(issue 44: 30-60x with a second llama.cpp beside it), while the process's share falls to its part
of the cores. Recorded on the shared 2-core VM (2026-11-26, ``benchmarks/bench_pairs.py --pairs 2``
with others' work running; configs/ci.yaml's 64-token baseline): the samples that ran at full
speed (24.6-25.4 t/s with 2 threads, 14.2 with 1) got 0.91-0.95 of their threads' time; the
slowed ones (2.3-9.2 t/s) got 0.33-0.62. 0.75 lies in that gap; a share under it means the
sample was measured on a machine shared with something else. To be set from more of the same
table on a quiet and a noisy machine (docs/decide.md)."""

MIN_JUDGED_WALL_S = 0.5  # shorter samples are mostly process start and model load: not judged
MAX_RERUNS = 2  # a pair measured again at most this often; the last measurement is kept either way
RERUN_NOTE_END = "(its samples' `reruns`)"  # how the manifest's one note on re-runs ends


def cpu_share(cpu_s: float | None, wall_s: float | None, threads: int | None) -> float | None:
    """CPU time over the wall time of ``threads`` threads (at most the cores we may use)."""
    if cpu_s is None or not wall_s or wall_s <= 0 or not threads:
        return None
    return cpu_s / (wall_s * min(threads, cpu_cores()))


def sample_share(s: Sample) -> float | None:
    """A recorded sample's share (``cpu_s`` over its wall time, or its batch's for the server runner)."""
    wall = s.batch_wall_s if s.batch_wall_s is not None else s.wall_s
    return cpu_share(s.cpu_s, wall, s.cpu_threads)


def _load_s(out: Outcome) -> float:
    """Seconds the process spent loading its models (llama.cpp's ``load time``): one thread reads
    the weights, so that part of the wall time has one thread's CPU, not ``threads``'."""
    perf = out.log.perf if out.log is not None and out.log.perf is not None else None
    ms = sum(p.load_ms or 0.0 for p in (perf.target, perf.draft) if p is not None) if perf else 0.0
    return ms / 1000 if ms > 0 and math.isfinite(ms) else 0.0


def starved(inv: Invocation, out: Outcome, backend: str | None) -> str | None:
    """Why this outcome is not judged (its process did not get its share of the CPU), or None.
    A process's load phase runs on one thread: its share is taken over the rest of its wall time
    (a quiet 32-token run spends a third of its life loading, and read 60-70% over the whole)."""
    threads = inv.generation.threads
    if backend != "cpu" or inv.warmup or out.error is not None or not threads:
        return None
    wall = out.batch_wall_s if out.batch_wall_s is not None else out.wall_s
    load = _load_s(out) if out.batch_wall_s is None else 0.0  # a server loaded before its batch
    share: float | None
    if out.cpu_s is not None and 0 < load < wall:
        used = min(threads, cpu_cores())
        share = max(out.cpu_s - load, 0.0) / ((wall - load) * used)
    else:
        share = cpu_share(out.cpu_s, wall, threads)
    if share is None or wall < MIN_JUDGED_WALL_S or share >= MIN_CPU_SHARE:
        return None
    used = min(threads, cpu_cores())
    return (
        f"its process got {share:.0%} of {used} thread{'s' * (used != 1)}{chr(39)}{'s' * (used == 1)} CPU "
        f"time over {wall:.1f} s "
        f"(under {MIN_CPU_SHARE:.0%}): something else had the CPU"
    )


def first_starved(
    batch: Sequence[tuple[int, Invocation]], outcomes: Sequence[Outcome], backend: str | None
) -> str | None:
    """The first reason in a batch (a pair, or the server's requests in flight together)."""
    for (_, inv), out in zip(batch, outcomes, strict=True):
        why = starved(inv, out, backend)
        if why is not None:
            return f"{inv.role} {inv.model}{f' on {inv.build}' if inv.build else ''}, {inv.prompt_id}: {why}"
    return None


def stamp(sample: Sample, inv: Invocation, out: Outcome, reruns: int) -> Sample:
    """The sample with what it got of the CPU, the load as it ended, and its pair's re-runs."""
    try:
        load = round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        load = None
    cpu = round(out.cpu_s, 4) if out.cpu_s is not None else None
    return sample.model_copy(
        update={"cpu_s": cpu, "cpu_threads": inv.generation.threads, "load_1m": load, "reruns": reruns}
    )


def note_rerun(noise: NoiseRecord, reason: str) -> str:
    """Count a re-run in the run's noise record; its note (one line, kept current) says how many."""
    noise.reruns += 1
    if noise.rerun_reason is None:
        noise.rerun_reason = reason
    return rerun_note(noise.reruns, noise.rerun_reason)


def rerun_note(reruns: int, first_reason: str | None) -> str:
    what = f"{reruns} re-run{'s' * (reruns != 1)} of a pair"
    return (
        f"{what}: a process of the pair did not get its share of the CPU (the first: {first_reason}); "
        f"a pair is measured at most {1 + MAX_RERUNS} times and the last kept {RERUN_NOTE_END}"
    )

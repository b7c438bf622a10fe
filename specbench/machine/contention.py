"""A sample measured while something else had the CPU is not judged: its pair is measured again.

The noise check (``specbench.machine.noise``) looks at the machine between samples; this looks at
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

import os

from specbench.machine.envinfo import cpu_cores
from specbench.machine.noise import NoiseRecord

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


def starved(threads: int, cpu_s: float | None, wall_s: float, load_s: float = 0.0) -> str | None:
    """Why a process that ran ``threads`` threads for ``wall_s`` seconds and got ``cpu_s`` of CPU is
    not judged (it did not get its share), or None. Its load phase (``load_s``) runs on one thread:
    the share is taken over the rest of its wall time (a quiet 32-token run spends a third of its
    life loading, and read 60-70% over the whole)."""
    used = min(threads, cpu_cores())
    share: float | None
    if cpu_s is not None and 0 < load_s < wall_s:
        share = max(cpu_s - load_s, 0.0) / ((wall_s - load_s) * used)
    else:
        share = cpu_share(cpu_s, wall_s, threads)
    if share is None or wall_s < MIN_JUDGED_WALL_S or share >= MIN_CPU_SHARE:
        return None
    return (
        f"its process got {share:.0%} of {used} thread{'s' * (used != 1)}{chr(39)}{'s' * (used == 1)} CPU "
        f"time over {wall_s:.1f} s (under {MIN_CPU_SHARE:.0%}): something else had the CPU"
    )


def load_1m() -> float | None:
    """The machine's 1-minute load average as a sample ends (None where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


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

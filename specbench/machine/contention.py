"""A sample measured while something else had the CPU is not judged: its pair is measured again.

The noise check (``machine.noise``) looks at the machine between samples; this looks at each sample:
the CPU time its process got (``os.wait4``; the server runner's over each batch, ``/proc/PID/stat``)
over its threads' wall time. Judged only where the share means something: CPU builds, with
``generation.threads`` set (else llama.cpp picks a count specbench does not know), and samples of at
least ``MIN_JUDGED_WALL_S``. A starved pair is measured again at most ``MAX_RERUNS`` times.
"""

from __future__ import annotations

from specbench.machine.envinfo import cpu_cores
from specbench.machine.noise import NoiseRecord

MIN_CPU_SHARE = 0.75
"""llama.cpp's threads spin-wait, so alone on its cores a process gets nearly all of its threads'
time; another process on a core stalls every thread at the next barrier. Full-speed samples got
91-95%, slowed ones 33-62% (docs/measured.md, CPU share of full-speed and slowed samples)."""

MIN_JUDGED_WALL_S = 0.5  # shorter samples are mostly process start and model load: not judged
MAX_RERUNS = 2  # a pair measured again at most this often; the last measurement is kept either way
RERUN_NOTE_END = "(its samples' `reruns`)"  # how the manifest's one note on re-runs ends


def cpu_share(cpu_s: float | None, wall_s: float | None, threads: int | None) -> float | None:
    """CPU time over the wall time of ``threads`` threads (at most the cores we may use)."""
    if cpu_s is None or not wall_s or wall_s <= 0 or not threads:
        return None
    return cpu_s / (wall_s * min(threads, cpu_cores()))


def starved(threads: int, cpu_s: float | None, wall_s: float, load_s: float = 0.0) -> str | None:
    """Why a process did not get its share of the CPU, or None. Its load phase (``load_s``) runs on
    one thread, so the share is taken over the rest (a quiet 32-token run loads for a third of it)."""
    used = min(threads, cpu_cores())
    loading = load_s if cpu_s is not None and 0 < load_s < wall_s else 0.0
    share = cpu_share(None if cpu_s is None else max(cpu_s - loading, 0.0), wall_s - loading, threads)
    if share is None or wall_s < MIN_JUDGED_WALL_S or share >= MIN_CPU_SHARE:
        return None
    return (
        f"its process got {share:.0%} of {used} thread{'s' * (used != 1)}{chr(39)}{'s' * (used == 1)} CPU "
        f"time over {wall_s:.1f} s (under {MIN_CPU_SHARE:.0%}): something else had the CPU"
    )


def note_rerun(noise: NoiseRecord, reason: str) -> None:
    """Count a re-run in the run's noise record; its one note (kept current) says how many."""
    noise.reruns += 1
    if noise.rerun_reason is None:
        noise.rerun_reason = reason
    note = rerun_note(noise.reruns, noise.rerun_reason)
    noise.notes = [n for n in noise.notes if not n.endswith(RERUN_NOTE_END)] + [note]


def rerun_note(reruns: int, first_reason: str | None) -> str:
    what = f"{reruns} re-run{'s' * (reruns != 1)} of a pair"
    return (
        f"{what}: a process of the pair did not get its share of the CPU (the first: {first_reason}); "
        f"a pair is measured at most {1 + MAX_RERUNS} times and the last kept {RERUN_NOTE_END}"
    )

"""Is the machine quiet enough to measure on? A noise check taken before, during and after a run,
stored in the manifest's ``noise`` record. Each signal is read only where the OS offers it (a
missing source leaves its field empty, never fails the run):

* another specbench run or llama.cpp binary outside our own process tree (``/proc``; ``ps``);
* how busy the CPUs are while specbench is idle (``/proc/stat``), and the 1-minute load average;
  both only over the CPUs we may run on (a benchmark pinned to other cores does not compete).
  Niced time counts as busy where the kernel groups tasks by session (``sched_autogroup``): a
  niced process in another session then gets a whole session's share (docs/measured.md);
* other processes on the GPU and its utilisation (``nvidia-smi``);
* the CPU frequency governor, and thermal throttling events rising during the run.

A busy machine, or one whose own speed moved beyond the run's precision (the sentinel), is a
warning; with ``--strict`` an error that refuses the run before the first sample and stops it during
(finished samples are kept; a move seen at the end fails the command).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pydantic import BaseModel, Field

from specbench.base.errors import RunError
from specbench.base.formats import now_iso
from specbench.machine.envinfo import cpu_cores, our_cpus, tool_output
from specbench.machine.speed import Sentinel, SpeedMoved, SpeedRecord

TOOL_TIMEOUT_S = 10
CPU_SAMPLE_S = 0.5  # how long the idle CPU usage is sampled
BUSY_CPU_FRACTION = 0.25  # share of all cores busy with other work, specbench idle
BUSY_GPU_UTIL = 10  # % utilisation of a GPU while specbench runs nothing on it
LLAMA_PREFIX = "llama-"  # llama.cpp binaries: llama-completion, llama-server, llama-bench, ...
# pre-2024 names and the unified `llama` program (2026), only with a llama.cpp path
LLAMA_NAMES = {"main", "server", "speculative", "lookup", "llama"}
STEADY_GOVERNORS = {"performance"}
DURING_EVERY = 10  # samples between two snapshots during the run


class GpuLoad(BaseModel):
    index: int
    utilization: int | None = None  # percent
    memory_used_mb: int | None = None


class ForeignProcess(BaseModel):
    """A process that competes with the measurement."""

    pid: int
    command: str  # shortened command line

    def describe(self) -> str:
        return f"pid {self.pid} {self.command}"


class NoiseSnapshot(BaseModel):
    """The machine at one moment of the run."""

    phase: str  # before | during | after
    at: str  # ISO time
    cpu_count: int
    load_1m: float | None = None
    cpu_busy: float | None = None  # fraction of our cores busy over CPU_SAMPLE_S (before/after only)
    governors: list[str] = Field(default_factory=list)  # distinct scaling_governor values
    throttle_count: int | None = None  # sum of thermal_throttle counters over all CPUs
    gpus: list[GpuLoad] = Field(default_factory=list)
    gpu_processes: list[ForeignProcess] = Field(default_factory=list)  # other processes on a GPU
    concurrent: list[ForeignProcess] = Field(default_factory=list)  # other specbench / llama.cpp runs


class NoiseRecord(BaseModel):
    """Every snapshot of a run and what made the machine busy (empty: quiet)."""

    snapshots: list[NoiseSnapshot] = Field(default_factory=list)
    busy: list[str] = Field(default_factory=list)  # one short reason each, e.g. "another llama.cpp ..."
    notes: list[str] = Field(default_factory=list)  # facts worth knowing that are not "busy"
    speed: SpeedRecord = Field(default_factory=SpeedRecord)  # the speed sentinel (older runs: empty)
    reruns: int = 0  # pairs measured again: a process did not get its CPU share (machine/contention.py)
    rerun_reason: str | None = None  # the first one's


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _processes() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, argv) of every process we can see."""
    procs: dict[int, tuple[int, list[str]]] = {}
    proc = Path("/proc")
    if proc.is_dir():
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            raw, stat = _read(entry / "cmdline"), _read(entry / "stat")
            if not raw or not stat:
                continue  # kernel threads have no command line; a process may have just exited
            try:
                ppid = int(stat.rsplit(b")", 1)[1].split()[1])
            except (IndexError, ValueError):
                continue
            argv = [a.decode("utf-8", "replace") for a in raw.rstrip(b"\0").split(b"\0")]
            procs[int(entry.name)] = (ppid, argv)
        return procs
    out = tool_output(["ps", "-axo", "pid=,ppid=,args="], TOOL_TIMEOUT_S)
    for line in (out or "").splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].isdigit() and parts[1].isdigit():
            procs[int(parts[0])] = (int(parts[1]), parts[2:])
    return procs


def _family(procs: dict[int, tuple[int, list[str]]], me: int) -> set[int]:
    """Our own process, its ancestors and all its descendants (the llama.cpp runs we started)."""

    def lineage(pid: int) -> list[int]:  # pid, its parent, ... up to one we cannot see
        chain = [pid]
        while chain[-1] in procs and procs[chain[-1]][0] not in chain:
            chain.append(procs[chain[-1]][0])
        return chain

    return {*lineage(me), *(pid for pid in procs if me in lineage(pid))}


def is_benchmark_process(argv: list[str]) -> bool:
    """A llama.cpp binary (argv[0] ``llama-*``, or an old name under a llama.cpp path) or a
    ``specbench run`` or ``tune`` (the script, or ``python -m specbench run``)."""
    if not argv:
        return False
    exe = argv[0]
    name = os.path.basename(exe)
    if name.startswith(LLAMA_PREFIX) or (name in LLAMA_NAMES and "llama" in exe.lower()):
        return True
    for i, arg in enumerate(argv):
        is_script = os.path.basename(arg) == "specbench"
        is_module = arg == "-m" and argv[i + 1 : i + 2] in (["specbench"], ["specbench.cli"])
        if is_script or is_module:
            rest = [a for a in argv[i + (2 if is_module else 1) :] if not a.startswith("-")]
            return rest[:1] in (["run"], ["tune"])
    return False


def _short(argv: list[str], limit: int = 80) -> str:
    text = " ".join([os.path.basename(argv[0]), *argv[1:]]) if argv else "?"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shares_cpus(pid: int, mine: set[int] | None) -> bool:
    """Whether ``pid`` may run on one of our CPUs (unknown: assume it does)."""
    if mine is None:
        return True
    try:
        return bool(set(os.sched_getaffinity(pid)) & mine)
    except (AttributeError, OSError):
        return True


def concurrent_processes() -> list[ForeignProcess]:
    """Other specbench runs and llama.cpp binaries that may run on our CPUs, outside our own
    process tree (one pinned to other cores does not compete with us)."""
    procs = _processes()
    ours = _family(procs, os.getpid())
    mine = our_cpus()
    return [
        ForeignProcess(pid=pid, command=_short(argv))
        for pid, (_, argv) in sorted(procs.items())
        if pid not in ours and is_benchmark_process(argv) and _shares_cpus(pid, mine)
    ]


def niced_work_yields() -> bool:
    """Whether a niced process yields to ours: only where the kernel does not group tasks by
    session (``/proc/sys/kernel/sched_autogroup_enabled`` 0 or absent)."""
    raw = _read(Path("/proc/sys/kernel/sched_autogroup_enabled"))
    return raw is None or raw.strip() == b"0"


def _cpu_times() -> tuple[int, int] | None:
    raw = _read(Path("/proc/stat"))
    return cpu_times(raw, our_cpus(), niced_idle=niced_work_yields()) if raw else None


def cpu_times(raw: bytes, mine: set[int] | None, niced_idle: bool = False) -> tuple[int, int] | None:
    """(busy, total) jiffies over the CPUs ``mine`` (all where None) from /proc/stat's text;
    ``niced_idle``: niced time counts as idle."""
    busy = total = 0
    for line in raw.splitlines():
        name, _, rest = line.partition(b" ")
        if not name.startswith(b"cpu") or name == b"cpu":
            continue
        if mine is not None and int(name[3:]) not in mine:
            continue
        try:
            values = [int(v) for v in rest.split()]
        except ValueError:
            return None
        idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
        idle += values[1] if niced_idle else 0
        busy += sum(values[:8]) - idle  # guest time is already inside user
        total += sum(values[:8])
    return (busy, total) if total else None


def cpu_busy(seconds: float = CPU_SAMPLE_S) -> float | None:
    """Fraction of our cores busy over ``seconds`` (call it while specbench itself is idle)."""
    first = _cpu_times()
    if first is None:
        return None
    time.sleep(seconds)
    second = _cpu_times()
    if second is None or second[1] <= first[1]:
        return None
    return round((second[0] - first[0]) / (second[1] - first[1]), 3)


def _glob_text(pattern: str) -> list[str]:
    raws = (_read(path) for path in sorted(Path("/sys/devices/system/cpu").glob(pattern)))
    return [raw.decode(errors="replace").strip() for raw in raws if raw is not None]


def governors() -> list[str]:
    return sorted(set(_glob_text("cpu[0-9]*/cpufreq/scaling_governor")))


def throttle_count() -> int | None:
    values = [int(v) for v in _glob_text("cpu[0-9]*/thermal_throttle/*_throttle_count") if v.isdigit()]
    return sum(values) if values else None


def gpu_state() -> tuple[list[GpuLoad], list[ForeignProcess]]:
    """GPU utilisation and the compute processes on the GPUs that are not ours (nvidia-smi)."""
    out = tool_output(
        ["nvidia-smi", "--query-gpu=index,utilization.gpu,memory.used", "--format=csv,noheader,nounits"],
        TOOL_TIMEOUT_S,
    )
    if out is None:
        return [], []
    loads = []
    for line in out.strip().splitlines():
        values = [int(v) if v.strip().isdigit() else None for v in line.split(",")]
        if len(values) >= 3 and values[0] is not None:
            loads.append(GpuLoad(index=values[0], utilization=values[1], memory_used_mb=values[2]))
    query = ["nvidia-smi", "--query-compute-apps=pid,process_name", "--format=csv,noheader"]
    rows = [line.partition(",") for line in (tool_output(query, TOOL_TIMEOUT_S) or "").strip().splitlines()]
    mine = _family(_processes(), os.getpid())  # read only where a GPU answers: a /proc scan less
    others = [
        ForeignProcess(pid=int(pid), command=name.strip())
        for pid, _, name in rows
        if pid.strip().isdigit() and int(pid) not in mine
    ]
    return loads, others


def snapshot(phase: str, at: str, idle: bool = False) -> NoiseSnapshot:
    """The machine now; ``idle``: specbench runs nothing, so CPU usage is sampled (takes 0.5 s)."""
    loads, gpu_others = gpu_state()
    return NoiseSnapshot(
        phase=phase, at=at, cpu_count=cpu_cores(), load_1m=load_1m(), cpu_busy=cpu_busy() if idle else None,
        governors=governors(), throttle_count=throttle_count(), gpus=loads, gpu_processes=gpu_others,
        concurrent=concurrent_processes(),
    )  # fmt: skip


def load_1m() -> float | None:
    """The machine's 1-minute load average (None where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def judge(snap: NoiseSnapshot, first: NoiseSnapshot | None = None) -> list[str]:
    """What makes the machine busy at this snapshot (``first``: the run's first one, for throttling)."""
    busy = []
    if snap.concurrent:
        kinds = ", ".join(p.describe() for p in snap.concurrent[:3])
        more = f" and {len(snap.concurrent) - 3} more" if len(snap.concurrent) > 3 else ""
        busy.append(f"another benchmark is running ({kinds}{more})")
    if snap.cpu_busy is not None and snap.cpu_busy > BUSY_CPU_FRACTION:
        busy.append(
            f"other work kept {snap.cpu_busy:.0%} of the {snap.cpu_count} cores busy while specbench "
            f"was idle (load average {snap.load_1m})"
        )
    if snap.gpu_processes:
        busy.append(
            "other processes on the GPU (" + ", ".join(p.describe() for p in snap.gpu_processes[:3]) + ")"
        )
    elif snap.phase == "before":  # later, nvidia-smi's utilisation window still holds our own work
        hot = [g for g in snap.gpus if g.utilization is not None and g.utilization > BUSY_GPU_UTIL]
        if hot:
            busy.append("GPU " + ", ".join(f"{g.index} at {g.utilization}%" for g in hot) + " busy")
    if first is not None and first.throttle_count is not None and snap.throttle_count is not None:
        rise = snap.throttle_count - first.throttle_count
        if rise > 0:
            busy.append(f"the CPU was thermally throttled {rise} times during the run")
    return busy


def governor_note(snap: NoiseSnapshot) -> str | None:
    unsteady = [g for g in snap.governors if g not in STEADY_GOVERNORS]
    if not unsteady:
        return None
    return (
        f"CPU frequency governor {', '.join(unsteady)}: clocks may vary between samples; "
        "the `performance` governor gives steadier numbers"
    )


def _kind(reason: str) -> str:
    return reason.split(" (")[0].split(" kept ")[0]


def record(noise: NoiseRecord, snap: NoiseSnapshot) -> list[str]:
    """Add a snapshot to the record; returns the busy reasons it brought that are new."""
    first = next((s for s in reversed(noise.snapshots) if s.phase == "before"), None)  # this process's
    noise.snapshots.append(snap)
    kinds = {_kind(reason) for reason in noise.busy}  # one reason of each kind (pids change)
    new = [reason for reason in judge(snap, first) if _kind(reason) not in kinds]
    noise.busy += new
    note = governor_note(snap)
    if note and note not in noise.notes:
        noise.notes.append(note)
    return new


class BusyMachine(RunError):
    """--strict and the noise check found the machine busy."""


class NoiseWatch:
    """Called by the runner before, every ``DURING_EVERY`` samples, and after; fills ``record``."""

    def __init__(self, record: NoiseRecord, strict: bool = False, sentinel: Sentinel | None = None):
        self.record, self.strict, self.sentinel = record, strict, sentinel

    def check(self, phase: str) -> None:
        found = record(self.record, snapshot(phase, now_iso(), idle=phase in ("before", "after")))
        if found and self.strict and phase != "after":
            raise BusyMachine(
                f"busy machine: {found[0]}; --strict refuses to measure on a busy machine "
                "(stop the other work, or run without --strict to measure with a warning)"
            )

    def __call__(self, phase: str, n_samples: int) -> None:
        taken = phase == "before" and any(s.phase == "before" for s in self.record.snapshots[-1:])
        skip = phase == "during" and (n_samples == 0 or n_samples % DURING_EVERY)
        if not taken and not skip:  # before: taken already, before the run folder's manifest was written
            self.check(phase)
        if self.sentinel is not None:  # during: when a reading is due
            reading = self.sentinel.maybe() if phase == "during" else self.sentinel.read(phase)
            self.raise_if_moved(reading is not None)

    def raise_if_moved(self, fresh: bool = True) -> None:
        warnings = self.record.speed.warnings
        if fresh and warnings and self.strict:
            raise SpeedMoved(
                f"{warnings[0]}; --strict refuses numbers measured while the machine's speed moves "
                "(measure again when the host is steady, or run without --strict to measure with a warning)"
            )

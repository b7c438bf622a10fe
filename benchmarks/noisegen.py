"""A noise generator of specbench's benchmarks: bounded background processes that load the CPU on
and off at random, for bench_pairs and bench_noisy, and run by hand in the foreground:

    .venv/bin/python benchmarks/noisegen.py [--duty 0.3] [--burst 1-5] [--threads 1] [--seconds 600]

``--threads`` workers, each busy ``--duty`` of its wall time in bursts of ``--burst`` MIN-MAX CPU
seconds, for ``--seconds`` at most (a hard limit). Each worker is a process (a thread would compete
for our GIL, not for the cores) that alternates bursts of spinning with sleeps sized in CPU time, so
``duty`` holds on a machine already busy. It stops at ``limit_s``, when its parent is gone, and when
``NoiseGenerator`` exits (Ctrl-C stops the command). At the end the command prints the duty cycle it
measured from its workers' CPU time against their wall time. Not part of the specbench package:
nothing specbench runs uses it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from specbench.base.childenv import child_env
from specbench.base.formats import json_text

WORKER = "--worker"  # the first argument of a worker process (this file run again)
TICK_S = 0.05  # how often a worker checks its limit and its parent, busy or asleep
STOP_GRACE_S = 1.0  # SIGTERM, then SIGKILL after this


@dataclass(frozen=True)
class NoiseSpec:
    """``threads`` workers, each busy ``duty`` of the time in ``burst_s`` bursts, for ``limit_s``."""

    duty: float = 0.3
    burst_s: tuple[float, float] = (1.0, 5.0)
    limit_s: float = 600.0
    threads: int = 1
    seed: int | None = None

    def check(self) -> None:
        """One line naming the bad value (a ValueError, for the caller to print)."""
        lo, hi = self.burst_s
        if not 0 < self.duty <= 1:
            raise ValueError(f"duty {self.duty}: give a fraction above 0 and at most 1, e.g. 0.3")
        if not 0 < lo <= hi:
            raise ValueError(f"burst {lo}-{hi} s: give MIN-MAX seconds with 0 < MIN <= MAX, e.g. 1-5")
        if not self.limit_s > 0:
            raise ValueError(f"limit {self.limit_s} s: give a time limit above 0")
        if self.threads < 1:
            raise ValueError(f"threads {self.threads}: give at least 1")


@dataclass
class WorkerStats:
    """One worker's CPU time against its wall time, from the OS (``os.wait4``) when it was reaped."""

    cpu_s: float
    wall_s: float
    exit_code: int | None


@dataclass
class _Worker:
    proc: subprocess.Popen
    started: float
    stats: WorkerStats | None = field(default=None)


def work(spec: NoiseSpec, parent: int) -> None:
    """The worker's loop (in its own process): bursts and sleeps until the limit or its parent's end."""
    rng = random.Random(spec.seed)
    start, cpu0 = time.monotonic(), time.process_time()
    deadline = start + spec.limit_s

    def go_on() -> bool:
        return time.monotonic() < deadline and os.getppid() == parent

    while go_on():
        end_cpu = time.process_time() + rng.uniform(*spec.burst_s)
        check = time.monotonic() + TICK_S
        while time.process_time() < end_cpu:  # busy: spin on the clock
            if time.monotonic() >= check:
                if not go_on():
                    return
                check = time.monotonic() + TICK_S
        wake = start + (time.process_time() - cpu0) / spec.duty  # CPU time / wall time == duty then
        while go_on() and (now := time.monotonic()) < wake:
            time.sleep(min(TICK_S, wake - now))


class NoiseGenerator:
    """``with NoiseGenerator(spec):`` the workers run inside the block; ``stats`` after it."""

    def __init__(self, spec: NoiseSpec):
        spec.check()
        self.spec = spec
        self._workers: list[_Worker] = []

    def start(self) -> NoiseGenerator:
        for i in range(self.spec.threads):
            seed = None if self.spec.seed is None else self.spec.seed + i
            payload = json_text({**asdict(self.spec), "seed": seed}, None, redacted=False)
            argv = [sys.executable, str(Path(__file__).resolve()), WORKER, payload, str(os.getpid())]
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=child_env(),
                start_new_session=True,
            )  # fmt: skip
            self._workers.append(_Worker(proc, time.monotonic()))
        return self

    def running(self) -> int:
        """How many workers are still running."""
        return sum(w.stats is None and not self._reap(w, block=False) for w in self._workers)

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for every worker to end by itself; True when they all have."""
        deadline = time.monotonic() + timeout_s
        while self.running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(TICK_S)
        return True

    def stop(self) -> list[WorkerStats]:
        """SIGTERM every worker still running, SIGKILL after ``STOP_GRACE_S``, reap them all."""
        for w in self._workers:
            if w.stats is None and not self._reap(w, block=False):
                w.proc.send_signal(signal.SIGTERM)  # a worker gone meanwhile is skipped
        deadline = time.monotonic() + STOP_GRACE_S
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.01)
        for w in self._workers:
            if w.stats is None:
                w.proc.send_signal(signal.SIGKILL)
                self._reap(w, block=True)
        return self.stats

    @property
    def stats(self) -> list[WorkerStats]:
        return [w.stats for w in self._workers if w.stats is not None]

    def duty(self) -> float | None:
        """The measured duty cycle: the workers' CPU time over their wall time (None before they end)."""
        stats = self.stats
        wall = sum(s.wall_s for s in stats)
        return sum(s.cpu_s for s in stats) / wall if stats and wall > 0 else None

    def _reap(self, w: _Worker, block: bool) -> bool:
        """Reap ``w`` with ``os.wait4``, whose usage is its CPU time; False while it still runs."""
        try:
            pid, status, usage = os.wait4(w.proc.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere: its usage is lost
            w.stats = WorkerStats(0.0, time.monotonic() - w.started, w.proc.returncode)
            return True
        if pid == 0:
            return False
        w.proc.returncode = os.waitstatus_to_exitcode(status)
        cpu = usage.ru_utime + usage.ru_stime
        w.stats = WorkerStats(cpu, time.monotonic() - w.started, w.proc.returncode)
        return True

    def __enter__(self) -> NoiseGenerator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _worker(argv: list[str]) -> None:
    """The worker process: ``python benchmarks/noisegen.py --worker SPEC_JSON PARENT_PID``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the harness stops it; Ctrl-C is the harness's
    data = json.loads(argv[0])
    data["burst_s"] = tuple(data["burst_s"])
    work(NoiseSpec(**data), int(argv[1]))


def burst_range(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition("-")
    try:
        return float(lo), float(hi or lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give MIN-MAX seconds, e.g. 1-5") from None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duty", type=float, default=0.3, help="share of its wall time each worker is busy")
    ap.add_argument("--burst", type=burst_range, default=(1.0, 5.0), help="MIN-MAX CPU seconds of a burst")
    ap.add_argument("--threads", type=int, default=1, help="busy workers (one process each)")
    ap.add_argument("--seconds", type=float, default=600.0, help="hard time limit")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    spec = NoiseSpec(args.duty, args.burst, args.seconds, args.threads, args.seed)
    try:
        gen = NoiseGenerator(spec)
    except ValueError as exc:
        sys.exit(f"error: {exc}")
    print(
        f"noise: {spec.threads} worker(s), duty {spec.duty:.0%}, bursts {spec.burst_s[0]:g}-"
        f"{spec.burst_s[1]:g} s, at most {spec.limit_s:g} s (Ctrl-C stops it)",
        file=sys.stderr,
    )
    try:
        with gen:
            gen.wait(spec.limit_s + 30)
    except KeyboardInterrupt:
        pass
    duty = gen.duty()
    print(f"measured duty {duty:.1%}" if duty is not None else "no worker measured", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:2] == [WORKER]:
        _worker(sys.argv[2:])
    else:
        main()

"""Run one llama.cpp command the way a benchmark must: nothing can hang it, nothing leaks out of it.

stdin is ``/dev/null`` (a chat-mode binary would wait on the terminal); the command gets its own
process group, killed whole on a timeout or Ctrl-C (SIGTERM, then SIGKILL) and, through
``lifeline``, when specbench is killed outright; stdout and stderr go to separate files; ``LC_ALL=C``
prints numbers with a decimal point, and secrets are not passed on (``base.childenv``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from specbench.base import interrupts, lifeline
from specbench.base.childenv import child_env
from specbench.base.errors import RunError
from specbench.parse.crash import exit_status

KILL_GRACE_S = 2.0


@dataclass(frozen=True)
class ProcessResult:
    """How one command ended. ``exit_code`` is None when a signal ended it (``signal`` names it)."""

    exit_code: int | None
    signal: str | None
    timed_out: bool
    wall_s: float
    stdout_path: Path
    stderr_path: Path
    # ``stamp_stdout``: (seconds since start, stdout bytes so far) at each read of the child's stdout
    stdout_times: list[tuple[float, int]] | None = None
    cpu_s: float | None = None  # CPU time (user + system) the child got, from os.wait4 (None: killed)


def kill_group(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM the process group, give it ``grace_s`` to exit, then SIGKILL what is left. The leader
    is reaped only after, so its pid (the group id) cannot have been reused when we signal it."""
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        lifeline.forget(proc)
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_alive(pgid):
            break
        time.sleep(0.05)
    with suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    proc.wait()
    lifeline.forget(proc)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but not ours to signal
        pass
    return True


def cannot_start(argv0: str, exc: OSError | ValueError) -> RunError:
    """Why a llama.cpp binary did not start (a ValueError: a NUL in an argument or the environment)."""
    if isinstance(exc, OSError):
        return RunError(f"cannot start {argv0}: {exc.strerror or exc}; rebuild with `specbench build`")
    return RunError(f"cannot start {argv0}: {exc} in its command line or environment")


@dataclass(frozen=True)
class Command:
    """One command of ``run_together``; ``cpus``: the CPUs it may run on (None: those we have).
    ``stamp_stdout``: every read of stdout (through a pipe) is time-stamped (docs/timing.md)."""

    argv: list[str]
    stdout_path: Path
    stderr_path: Path
    timeout_s: float
    stamp_stdout: bool = False
    cpus: frozenset[int] | None = None


@dataclass
class _Child:
    command: Command
    proc: subprocess.Popen
    start: float
    out: BinaryIO
    err: BinaryIO
    reader: threading.Thread | None = None
    times: list[tuple[float, int]] | None = None
    result: ProcessResult | None = None


def run_together(commands: list[Command], grace_s: float = KILL_GRACE_S) -> list[ProcessResult]:
    """Start every command, then wait for all (each to its own timeout): a duet pair's two builds run
    at the same time, each on its own CPUs. Ctrl-C kills every group still running and propagates."""
    if not commands or not all(c.argv for c in commands):
        raise RunError("empty command line; this is a bug in the plan")
    children: list[_Child] = []
    try:
        for command in commands:
            # A signal during Popen is raised once the child is in ``children``: the clean-up kills it.
            with interrupts.starting_child():
                children.append(_start(command))
        delay = 0.0005  # polls as Popen.wait does: quickly at first, then every 50 ms at most
        while any(c.result is None for c in children):
            for child in children:
                if child.result is None:
                    _poll(child, grace_s)
            if any(c.result is None for c in children):
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
    except BaseException:  # Ctrl-C (KeyboardInterrupt) or anything else: never leave one running
        for child in children:
            if child.result is None:
                kill_group(child.proc, grace_s=0.5)
        raise
    finally:
        for child in children:
            _close(child, grace_s)
    return [c.result for c in children if c.result is not None]


def _start(command: Command) -> _Child:
    """Popen in its own session that dies with specbench (``lifeline``), pinned to ``command.cpus``
    (set around the fork: the child inherits it), in its logs' folder (llama.cpp of 2023-24 writes
    main.log into its working folder, which must not be the user's)."""
    for path in (command.stdout_path, command.stderr_path):
        path.parent.mkdir(parents=True, exist_ok=True)
    out, err = open(command.stdout_path, "wb"), open(command.stderr_path, "wb")
    before = os.sched_getaffinity(0) if command.cpus and hasattr(os, "sched_setaffinity") else None
    start = time.monotonic()
    try:
        if before is not None and command.cpus:  # before is read only when cpus are given
            os.sched_setaffinity(0, command.cpus)
        try:
            proc = lifeline.popen(
                command.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE if command.stamp_stdout else out,
                stderr=err,
                env=child_env(),
                cwd=command.stdout_path.parent,
            )
        finally:
            if before is not None:
                os.sched_setaffinity(0, before)
    except BaseException as exc:
        out.close()
        err.close()
        if isinstance(exc, OSError | ValueError):
            raise cannot_start(command.argv[0], exc) from exc
        raise
    child = _Child(command, proc, start, out, err)
    if command.stamp_stdout:
        child.times = []
        args = (proc.stdout, out, start, child.times)
        child.reader = threading.Thread(target=_copy_stamped, args=args, daemon=True)
        child.reader.start()
    return child


def _poll(child: _Child, grace_s: float) -> None:
    """Reap ``child`` if it has ended (``os.wait4``: its CPU time), or kill it past its timeout."""
    timed_out, cpu_s = False, None
    proc = child.proc
    try:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    except ChildProcessError:  # reaped already: no usage to give
        proc.wait()
        pid, status, usage = proc.pid, None, None
    if pid == proc.pid:
        if status is not None:
            proc.returncode = os.waitstatus_to_exitcode(status)
            cpu_s = usage.ru_utime + usage.ru_stime if usage is not None else None
    elif time.monotonic() - child.start > child.command.timeout_s:
        timed_out = True
        kill_group(proc, grace_s)
    else:
        return
    if child.reader is not None:
        child.reader.join(timeout=grace_s + 1.0)  # EOF once the group is gone
    wall_s = time.monotonic() - child.start
    if not timed_out and _group_alive(proc.pid):
        with suppress(ProcessLookupError):  # the leader left helpers in its group: they die with it
            os.killpg(proc.pid, signal.SIGKILL)
    lifeline.forget(proc)
    code, sig = (None, None) if timed_out else exit_status(proc.returncode)
    paths = (child.command.stdout_path, child.command.stderr_path)
    child.result = ProcessResult(code, sig, timed_out, wall_s, *paths, child.times, cpu_s)


def _close(child: _Child, grace_s: float) -> None:
    if child.reader is not None:
        child.reader.join(timeout=grace_s + 1.0)
        if child.proc.stdout is not None:  # the pipe the reader read
            child.proc.stdout.close()
    with suppress(OSError):  # its last buffered bytes on a full disk (_copy_stamped)
        child.out.close()
    child.err.close()


def process_cpu_s(pid: int) -> float | None:
    """CPU time (user + system) a running process has had so far (Linux ``/proc/PID/stat``; None
    elsewhere or when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _copy_stamped(pipe, out, start: float, times: list[tuple[float, int]]) -> None:
    """Copy the child's stdout to ``out`` as it comes, noting when each read returned."""
    fd, total = pipe.fileno(), 0
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except OSError:
            return
        if not data:
            return
        now = time.monotonic()
        total += len(data)
        times.append((now - start, total))
        with suppress(OSError):  # a full disk cuts the file as the child's own write would
            out.write(data)  # and the pipe is still drained: the child never blocks on it
            out.flush()  # on disk as it comes, as the child's own write to the file would be

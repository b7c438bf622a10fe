"""Run one llama.cpp command the way a benchmark must: nothing can hang it, nothing leaks out of it.

* stdin is ``/dev/null``: a chat-mode binary would otherwise wait on the terminal forever.
* The command gets its own session (process group); a timeout or Ctrl-C kills the whole group
  (SIGTERM, then SIGKILL after a grace period), so helper processes die with it.
* stdout and stderr go to separate files: generated text on one, statistics on the other.
* ``LC_ALL=C`` so numbers print with a decimal point; secrets (HF_TOKEN...) are not passed on
  (``specbench.base.childenv``), so a binary that echoes its environment cannot write them into the raw logs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from specbench.base import interrupts
from specbench.base.childenv import child_env
from specbench.base.errors import RunError

KILL_GRACE_S = 2.0


@dataclass(frozen=True)
class ProcessResult:
    """How one command ended. ``exit_code`` is None when a signal ended it (``signal`` names it)."""

    argv: list[str]
    exit_code: int | None
    signal: str | None
    timed_out: bool
    wall_s: float
    stdout_path: Path
    stderr_path: Path
    # ``stamp_stdout``: (seconds since start, stdout bytes so far) at each read of the child's stdout
    stdout_times: list[tuple[float, int]] | None = None
    cpu_s: float | None = None  # CPU time (user + system) the child got, from os.wait4 (None: killed)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def kill_group(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM the process group, give it ``grace_s`` to exit, then SIGKILL what is left.

    The leader is reaped only after the group was signalled, so its pid (= the group id) cannot
    have been reused by an unrelated process when we send the signals.
    """
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_alive(pgid):
            break
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_command(
    argv: list[str],
    stdout_path: Path,
    stderr_path: Path,
    timeout_s: float,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    grace_s: float = KILL_GRACE_S,
    stamp_stdout: bool = False,
) -> ProcessResult:
    """Run ``argv`` to completion or timeout; KeyboardInterrupt kills the group and propagates.

    ``stamp_stdout``: stdout goes through a pipe and every read is time-stamped, a wall clock under
    our control over the generated tokens (llama.cpp flushes stdout after each one): see docs/timing.md.
    """
    if not argv:
        raise RunError("empty command line; this is a bug in the plan")
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    stderr_path.parent.mkdir(parents=True, exist_ok=True)
    timed_out, cpu_s = False, None
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        start = time.monotonic()
        interrupts.child_starting()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE if stamp_stdout else out,
                stderr=err,
                env=child_env(env),
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            interrupts.child_started()
            raise RunError(
                f"cannot start {argv[0]}: {exc.strerror or exc}; rebuild with `specbench build`"
            ) from exc
        except BaseException:
            interrupts.child_started()
            raise
        times: list[tuple[float, int]] | None = None
        reader = None
        if stamp_stdout:
            times = []
            args = (proc.stdout, out, start, times)
            reader = threading.Thread(target=_copy_stamped, args=args, daemon=True)
            reader.start()
        try:
            interrupts.child_started()  # inside the try: a signal that came meanwhile kills the group below
            cpu_s = wait_cpu(proc, timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc, grace_s)
        except BaseException:  # Ctrl-C (KeyboardInterrupt) or anything else: never leave it running
            kill_group(proc, grace_s=0.5)
            raise
        finally:
            if reader is not None:
                reader.join(timeout=grace_s + 1.0)  # EOF once the group is gone
                proc.stdout.close()
        wall_s = time.monotonic() - start
        if not timed_out and _group_alive(proc.pid):
            # The leader exited but left helpers behind in its group: they must not outlive it.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    code = proc.returncode
    sig = None
    if code is not None and code < 0:
        try:
            sig = signal.Signals(-code).name
        except ValueError:
            sig = f"signal {-code}"
        code = None
    if timed_out:
        code, sig = None, None
    return ProcessResult(list(argv), code, sig, timed_out, wall_s, stdout_path, stderr_path, times, cpu_s)


def wait_cpu(proc: subprocess.Popen, timeout_s: float) -> float | None:
    """``proc.wait(timeout_s)`` that reaps with ``os.wait4``, whose usage is the CPU time the child
    got (its threads, and children it waited for): a sample that did not get its share of the CPU is
    told by it (``specbench.execute.contention``). Polls as ``Popen.wait`` does; raises
    ``subprocess.TimeoutExpired`` as it does."""
    deadline, delay = time.monotonic() + timeout_s, 0.0005
    while True:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:  # reaped already: no usage to give
            proc.wait()
            return None
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return usage.ru_utime + usage.ru_stime
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise subprocess.TimeoutExpired(proc.args, timeout_s)
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)


def process_cpu_s(pid: int) -> float | None:
    """CPU time (user + system) a running process has had so far (Linux ``/proc/PID/stat``; None
    elsewhere or when it is gone): the server runner takes the difference around a request."""
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
        out.write(data)
        total += len(data)
        times.append((now - start, total))

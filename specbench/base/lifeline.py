"""No process specbench starts outlives it, however specbench ends (``kill -9`` and the OOM killer too).

A child runs in a session of its own (so a timeout kills its whole group), which no signal to
specbench's group reaches, and SIGKILL runs no clean-up. ``popen`` guards it twice:

* Linux: ``PR_SET_PDEATHSIG``, set between fork and exec with a ``prctl`` looked up in the parent
  (no import after the fork); it follows the starting *thread*, so only the main thread sets it.
* Everywhere: a watchdog process reads the children's group ids from a pipe only specbench writes
  (each child lists itself before exec); at EOF it SIGTERMs each group still listed, then SIGKILLs.
  It covers a child's helpers too, and ignores the signals that end specbench's group.

Limit: a specbench killed between reaping a leader and ``forget`` may leave an id that a new group
takes before the watchdog reads EOF."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

from specbench.base import interrupts
from specbench.base.childenv import child_env

_PR_SET_PDEATHSIG = 1
_WATCHDOG = r"""
import os, signal, time
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN)
groups, buf = set(), b""
try:
    while data := os.read(0, 4096):
        buf += data
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if line[:1] == b"+":
                groups.add(int(line[1:]))
            elif line[:1] == b"-":
                groups.discard(int(line[1:]))
except OSError:
    pass

def signal_all(sig):  # 0: only drops the groups that are gone
    for g in list(groups):
        try:
            os.killpg(g, sig)
        except ProcessLookupError:
            groups.discard(g)
        except OSError:
            pass

signal_all(signal.SIGTERM)
deadline = time.monotonic() + 2.0
while groups and time.monotonic() < deadline:
    signal_all(0)
    time.sleep(0.05)
signal_all(signal.SIGKILL)
"""

_lock = threading.Lock()
_watchdog: subprocess.Popen | None = None
_watchdog_failed = False
_prctl: Callable[..., int] | None = None
_POPEN = subprocess.Popen  # the watchdog's own start (a test's stand-in Popen is for the children)


def popen(argv: list[str], **kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` in a session of its own that ends with specbench; ``forget`` it once reaped."""
    kwargs["preexec_fn"] = _in_child(_watchdog_fd(), _pdeathsig())
    return subprocess.Popen(argv, start_new_session=True, **kwargs)


def run(argv: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` through ``popen``: a timeout or Ctrl-C kills the whole group, not the leader."""
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    with interrupts.starting_child():
        proc = popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()  # reaps the leader; the pipes close once the group is gone
        raise
    finally:
        forget(proc)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def forget(proc: subprocess.Popen) -> None:
    """``proc`` has been reaped: its group id is no longer the watchdog's to kill."""
    fd = _watchdog_fd()
    if fd is not None:
        with contextlib.suppress(OSError):
            os.write(fd, f"-{proc.pid}\n".encode())


def _in_child(fd: int | None, prctl: Callable[..., int] | None) -> Callable[[], None]:
    """The ``preexec_fn``: after fork, before exec, a few system calls and nothing else."""
    parent = os.getpid()

    def preexec() -> None:
        me = os.getpid()
        if fd is not None:  # start_new_session ran before this: our pid is our group's id
            try:
                os.write(fd, b"+%d\n" % me)
            except OSError:
                pass
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:  # specbench died before the call: the signal will not come
                os.kill(me, signal.SIGKILL)

    return preexec


def _pdeathsig() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up here in the parent (Linux, main thread only), else None."""
    global _prctl
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    if _prctl is None:
        try:
            import ctypes

            _prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            return None
    return _prctl


def _watchdog_fd() -> int | None:
    """The write end of the watchdog's pipe (the watchdog started on first use); None if it cannot run."""
    global _watchdog, _watchdog_failed
    with _lock:
        if not _watchdog_failed and (_watchdog is None or _watchdog.poll() is not None):
            try:
                _watchdog = _POPEN(
                    [sys.executable, "-I", "-S", "-c", _WATCHDOG],
                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    env=child_env(), start_new_session=True, bufsize=0,
                )  # fmt: skip
            except OSError:
                _watchdog_failed = True
        if _watchdog_failed or _watchdog is None or _watchdog.stdin is None:
            return None
        return _watchdog.stdin.fileno()

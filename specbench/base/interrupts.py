"""SIGTERM and SIGHUP end any specbench command the way Ctrl-C does.

A CI cancel sends SIGTERM, a closed terminal SIGHUP. Python's default for both is to die on the
spot: the llama.cpp child (in its own session) runs on orphaned, a run's manifest stays
``running``, a build's compiler keeps compiling. ``install`` (called once by the CLI's ``main``,
so every command has it, the ones still to come included) turns each into ``errors.Terminated``,
a KeyboardInterrupt raised where Ctrl-C's would be, so the same clean-up runs: children killed,
state recorded, one line saying what was kept, exit 128 + the signal's number (143, 129).

A signal that lands while a child is being started (inside ``subprocess.Popen``) would orphan
that child, its pid never returned; the exception then waits until Popen returns
(``child_starting`` / ``child_started`` around the call), where the caller can kill it.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

from specbench.base.errors import Terminated

_starting = False  # a child is being started: a signal's exception must wait (see deliver)
_pending: BaseException | None = None
TERMINATING = (signal.SIGTERM, signal.SIGHUP)


def deliver(exc: BaseException) -> None:
    """Raise ``exc`` from a signal handler, unless a child is being started (then: right after)."""
    global _pending
    if _starting:
        _pending = exc
        return
    raise exc


def child_starting() -> None:
    """Call right before ``subprocess.Popen``; ``child_started`` right after it returns or fails."""
    global _starting
    _starting = True


def child_started() -> None:
    """Popen returned (or failed): a signal that came meanwhile is raised now."""
    global _starting, _pending
    _starting = False
    if _pending is not None:
        pending, _pending = _pending, None
        raise pending


@contextmanager
def starting_child() -> Iterator[None]:
    """``with starting_child(): proc = Popen(...)``: a signal during Popen is raised after the block."""
    child_starting()
    try:
        yield
    finally:
        child_started()


def _terminate(signum: int, frame: object) -> None:
    for sig in TERMINATING:  # a second signal must not cut the clean-up short
        signal.signal(sig, signal.SIG_IGN)
    deliver(Terminated(signal.Signals(signum).name, signum))


def _interrupt(signum: int, frame: object) -> None:
    deliver(KeyboardInterrupt())


def install() -> None:
    """SIGTERM/SIGHUP raise ``Terminated``; SIGINT raises KeyboardInterrupt (installed explicitly:
    a shell starts background jobs with SIGINT ignored), both never inside the start of a child."""
    for sig in TERMINATING:
        signal.signal(sig, _terminate)
    signal.signal(signal.SIGINT, _interrupt)


def describe(exc: BaseException) -> str:
    """``SIGTERM`` / ``SIGHUP`` / ``Ctrl-C``: what ended the command, for its one line."""
    return getattr(exc, "signal_name", "Ctrl-C")


def exit_code(exc: BaseException) -> int:
    return getattr(exc, "exit_code", 130)

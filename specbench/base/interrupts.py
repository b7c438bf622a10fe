"""SIGTERM and SIGHUP end any specbench command the way Ctrl-C does.

Python's default dies on the spot, leaving the llama.cpp child orphaned and the manifest
``running``; ``install`` turns each into ``errors.Terminated`` so Ctrl-C's clean-up runs. A signal
inside ``subprocess.Popen`` would orphan the child, so it waits until Popen returns its pid."""

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
    """SIGTERM/SIGHUP raise ``Terminated``, SIGINT KeyboardInterrupt (a shell may have ignored it)."""
    for sig in TERMINATING:
        signal.signal(sig, _terminate)
    signal.signal(signal.SIGINT, _interrupt)


def describe(exc: BaseException) -> str:
    """``SIGTERM`` / ``SIGHUP`` / ``Ctrl-C``: what ended the command, for its one line."""
    return getattr(exc, "signal_name", "Ctrl-C")


def exit_code(exc: BaseException) -> int:
    return getattr(exc, "exit_code", 130)

"""The noise check during a run: snapshots of the machine and the speed sentinel's readings, into
the manifest's ``noise`` record.

A busy machine, or one whose own speed moved beyond the run's precision, is a warning; with
``--strict`` an error that refuses the run before the first sample and stops it during (finished
samples are kept; a move seen at the end fails the command).
"""

from __future__ import annotations

from specbench.base.errors import RunError
from specbench.base.formats import now_iso
from specbench.machine import noise
from specbench.machine.sentinel import Sentinel, SpeedMoved, strict_message

DURING_EVERY = 10  # samples between two snapshots during the run


class BusyMachine(RunError):
    """--strict and the noise check found the machine busy."""


class NoiseWatch:
    """Called by the runner before, every ``DURING_EVERY`` samples, and after; fills ``record``."""

    def __init__(self, record: noise.NoiseRecord, strict: bool = False, sentinel: Sentinel | None = None):
        self.record, self.strict, self.sentinel = record, strict, sentinel

    def check(self, phase: str) -> None:
        found = noise.record(self.record, noise.snapshot(phase, now_iso(), idle=phase in ("before", "after")))
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
            raise SpeedMoved(strict_message(warnings[0]))

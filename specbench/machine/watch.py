"""The noise check during a run: snapshots of the machine into the manifest's ``noise`` record,
and the speed sentinel's readings beside them (``specbench.machine.sentinel``).

A busy machine (another benchmark, other GPU work, CPU load while we are idle, throttling) is a
warning by default, printed at the end of the run and in the report; with ``--strict`` it is an
error: before the first sample it refuses the run, during it stops the run (finished samples
are kept). The snapshots themselves are in ``specbench.machine.noise``. A machine whose own speed
moved beyond the run's precision (the sentinel) is the same kind of warning, with ``--strict`` an
error as soon as a reading shows it (at the end too: the samples are kept, the command fails).
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
    """Called by the runner (``observe``): before, every ``every`` samples, and after; it fills
    ``record`` (the manifest's ``noise``)."""

    def __init__(
        self,
        record: noise.NoiseRecord,
        strict: bool = False,
        every: int = DURING_EVERY,
        sentinel: Sentinel | None = None,
    ):
        self.record, self.strict, self.every, self.sentinel = record, strict, every, sentinel
        self.new: list[str] = []  # busy reasons found by this process

    def check(self, phase: str) -> None:
        snap = noise.snapshot(phase, now_iso(), idle=phase in ("before", "after"))
        found = noise.record(self.record, snap)
        self.new += found
        if found and self.strict and phase != "after":
            raise BusyMachine(
                f"busy machine: {found[0]}; --strict refuses to measure on a busy machine "
                "(stop the other work, or run without --strict to measure with a warning)"
            )

    def __call__(self, phase: str, n_samples: int) -> None:
        taken = phase == "before" and any(s.phase == "before" for s in self.record.snapshots[-1:])
        skip = phase == "during" and (n_samples == 0 or n_samples % self.every)
        if not taken and not skip:  # before: taken already, before the run folder's manifest was written
            self.check(phase)
        self.speed(phase)

    def speed(self, phase: str) -> None:
        """The sentinel's reading of this phase (during: when one is due)."""
        if self.sentinel is None:
            return
        reading = self.sentinel.maybe() if phase == "during" else self.sentinel.read(phase)
        self.raise_if_moved(reading is not None)

    def raise_if_moved(self, fresh: bool = True) -> None:
        warnings = self.record.speed.warnings
        if fresh and warnings and self.strict:
            raise SpeedMoved(strict_message(warnings[0]))

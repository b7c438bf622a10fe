"""The noise check during a run: snapshots of the machine into the manifest's ``noise`` record.

A busy machine (another benchmark, other GPU work, CPU load while we are idle, throttling) is a
warning by default, printed at the end of the run and in the report; with ``--strict`` it is an
error: before the first sample it refuses the run, during it stops the run (finished samples
are kept). The snapshots themselves are in ``specbench.builder.noise``.
"""

from __future__ import annotations

from specbench.base.errors import RunError
from specbench.builder import noise
from specbench.results.manifest import Manifest, now_iso

DURING_EVERY = 10  # samples between two snapshots during the run


class BusyMachine(RunError):
    """--strict and the noise check found the machine busy."""


class NoiseWatch:
    """Called by the runner (``observe``): before, every ``every`` samples, and after."""

    def __init__(self, manifest: Manifest, strict: bool = False, every: int = DURING_EVERY):
        self.manifest, self.strict, self.every = manifest, strict, every
        self.new: list[str] = []  # busy reasons found by this process

    def check(self, phase: str) -> None:
        snap = noise.snapshot(phase, now_iso(), idle=phase in ("before", "after"))
        found = noise.record(self.manifest.noise, snap)
        self.new += found
        if found and self.strict and phase != "after":
            raise BusyMachine(
                f"busy machine: {found[0]}; --strict refuses to measure on a busy machine "
                "(stop the other work, or run without --strict to measure with a warning)"
            )

    def __call__(self, phase: str, n_samples: int) -> None:
        if phase == "before" and any(s.phase == "before" for s in self.manifest.noise.snapshots[-1:]):
            return  # taken already, before the run folder's manifest was written
        if phase == "during" and (n_samples == 0 or n_samples % self.every):
            return
        self.check(phase)

"""The speed sentinel: one fixed reference re-measured at the start, at intervals and at the end.

The reference is ``Plan.sentinel`` (a short llama-completion decode of the run's first target and
prompt, for both runners); running and judging it is ``execute.reference``'s, this module decides
when to read. The readings between start and end take at most ``SHARE`` of the time between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from specbench.base.errors import RunError
from specbench.base.formats import now_iso
from specbench.machine.speed import SpeedReading, SpeedRecord, judge_speed

SHARE = 0.025  # of the run's time the readings between start and end may take
MIN_INTERVAL_S = 30.0  # never closer than this (a short run gets its start and end readings only)

# One run of the reference (its argument: the reading's number): its t/s, or None and why not, and
# its timed decode span; an OSError or RunError it raises is recorded as the reading's error.
Measure = Callable[[int], tuple[float | None, str | None, float | None]]


class SpeedMoved(RunError):
    """--strict and the sentinel saw the machine's own speed move beyond the run's precision."""


class Sentinel:
    """Reads the reference when asked (``read``) or when due (``maybe``), into ``record``.
    ``measure`` None: no reference (a plan without a baseline); ``pairs`` fills the record's
    figures read from the run's samples (its pairs' span; at the end the baseline windows)."""

    def __init__(
        self,
        measure: Measure | None,
        record: SpeedRecord,
        precision: float,
        reference: str | None = None,
        off: bool = False,
        pairs: Callable[[SpeedRecord, str], None] | None = None,
    ):
        self.measure, self.record, self.precision, self.pairs = measure, record, precision, pairs
        record.off = record.off or off  # `sentinel: false` (kept on a resumed run's record)
        self.last = time.monotonic()
        self.interval = MIN_INTERVAL_S
        if measure is not None and record.reference is None:
            record.reference = reference

    def read(self, phase: str) -> SpeedReading | None:
        """One reading now (None: no reference), then the verdict."""
        reading = self._measure(phase) if self.measure is not None else None
        if self.pairs is not None:
            self.pairs(self.record, phase)
        judge_speed(self.record, self.precision)
        return reading

    def _measure(self, phase: str) -> SpeedReading:
        assert self.measure is not None
        at, start = now_iso(), time.monotonic()
        try:
            tps, error, span = self.measure(len(self.record.readings))
        except (OSError, RunError) as exc:  # the sentinel must never cost the run its samples
            tps, error, span = None, f"{type(exc).__name__}: {exc}", None
        wall = time.monotonic() - start
        reading = SpeedReading(phase=phase, at=at, tps=tps, wall_s=round(wall, 3), error=error, span_s=span)
        self.record.readings.append(reading)
        self.last = time.monotonic()
        self.interval = max(MIN_INTERVAL_S, wall / SHARE)
        return reading

    def last_wall(self) -> float:
        """What the last reading took: the price of the next one (0 before any)."""
        return self.record.readings[-1].wall_s if self.measure is not None and self.record.readings else 0.0

    def due(self) -> bool:
        return self.measure is not None and time.monotonic() - self.last >= self.interval

    def maybe(self) -> SpeedReading | None:
        return self.read("during") if self.due() else None

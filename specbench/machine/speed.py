"""Did the machine's own speed move during the run? The speed sentinel: one fixed reference
re-measured at the start, at intervals and at the end, its record and its judgement.

The noise check sees other work on the machine, not a host that gets slower by itself (a VM's
phases, a neighbour on the same cores, clocks). The sentinel's readings and the server runner's
baseline windows (before and after each group's speculative servers) see that: a move between two
readings beyond the run's precision is the warning ``machine speed moved by X% during the run``.

The reference is ``Plan.sentinel`` (a short llama-completion decode of the run's first target and
prompt, for both runners); running and judging it is ``execute.benchmark``'s, ``Sentinel`` decides
when to read. The readings between start and end take at most ``SHARE`` of the time between them.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable

from pydantic import BaseModel, Field

from specbench.base.errors import RunError
from specbench.base.formats import epoch_seconds, now_iso


class SpeedReading(BaseModel):
    """One measurement of the reference."""

    phase: str  # before | during | after
    at: str  # ISO time it started
    tps: float | None = None  # decode t/s (None: the reading failed; the reason is in ``error``)
    wall_s: float = 0.0  # what it cost, model load included
    error: str | None = None
    span_s: float | None = None  # its timed decode span (None: a record of an older specbench)


class BaselineWindows(BaseModel):
    """The server runner's baseline of one setting group, measured before and after its speculative
    servers (mean decode t/s over the same prompts and repetitions)."""

    group: str  # e.g. "smol_f32 parallel=2"
    before_tps: float
    after_tps: float

    @property
    def moved(self) -> float:
        return (self.after_tps - self.before_tps) / self.before_tps


class SpeedRecord(BaseModel):
    """The sentinel's series, the server runner's baseline windows, and the verdict on both."""

    reference: str | None = None  # what is re-measured, in words
    readings: list[SpeedReading] = Field(default_factory=list)
    windows: list[BaselineWindows] = Field(default_factory=list)
    precision: float | None = None  # the threshold the verdict used (the run's precision)
    moved: float | None = None  # the largest relative move found (signed; None: nothing to compare)
    warnings: list[str] = Field(default_factory=list)  # "machine speed moved by ..." (empty: steady)
    pair_s: float | None = None  # how long one pair of the run spans (median; None: no pairs yet)
    notes: list[str] = Field(default_factory=list)  # moves that fell between pairs: said, not warned
    off: bool = False  # the config said `sentinel: false`: no readings by choice

    def cost_s(self) -> float:
        return sum(r.wall_s for r in self.readings)

    def describe(self, run_s: float | None = None) -> str | None:
        """One line for the end of a run: what was read, its range, and what it cost."""
        if self.off:
            return "speed sentinel off (sentinel: false): the machine's own speed was not re-measured"
        values = [tps for _, tps in self.series()]
        if not self.readings:
            return None
        spread = f"{min(values):.1f}-{max(values):.1f} t/s" if values else "no reading measured"
        share = f" = {self.cost_s() / run_s:.1%} of the run" if run_s else ""
        return (
            f"speed sentinel: {len(self.readings)} readings of {self.reference}, {spread}; "
            f"they took {self.cost_s():.1f} s{share}"
        )

    def series(self) -> list[tuple[str, float]]:
        """(ISO time, t/s) of every reading that measured something, in order."""
        return [(r.at, r.tps) for r in self.readings if r.tps is not None]


def largest_move(values: list[float]) -> tuple[float, float, float] | None:
    """(move, A, B): the reading farthest from the first one, relative to it (a slow phase in the
    middle of the run that is over by its end still counts)."""
    if len(values) < 2 or values[0] <= 0:
        return None
    first = values[0]
    far = max(values[1:], key=lambda v: abs(v - first))
    return (far - first) / first, first, far


# A reading whose decode is shorter than this times the clock's noise, not the machine (a small model
# on an H200: +-20% between two readings of one steady machine, benchmarks/results/cuda-e2e-h200).
SHORT_READING_S = 0.1


def short_readings(record: SpeedRecord) -> float | None:
    """The readings' median decode span when it is under ``SHORT_READING_S`` (else None)."""
    spans = sorted(r.span_s for r in record.readings if r.tps is not None and r.span_s is not None)
    median = spans[len(spans) // 2] if spans else None
    return median if median is not None and median < SHORT_READING_S else None


def moved_message(move: float, a: float, b: float, where: str = "during the run") -> str:
    return f"machine speed moved by {move:+.0%} {where} (from {a:.1f} to {b:.1f} t/s)"


def within_pair(record: SpeedRecord) -> float | None:
    """How far the speed moved within one pair (relative), at the steepest change between two
    consecutive readings; None without ``pair_s`` or two timed readings. A drift between pairs
    falls on both sides alike and the pair's ratio cancels it; only a drift within one biases it."""
    if not record.pair_s:
        return None
    points = []
    for r in record.readings:
        at = epoch_seconds(r.at)
        if r.tps and r.tps > 0 and at is not None:
            points.append((at + r.wall_s / 2, r.tps))
    rates = [abs(math.log(b / a)) / max(tb - ta, 1.0) for (ta, a), (tb, b) in itertools.pairwise(points)]
    return math.expm1(max(rates) * record.pair_s) if rates else None


def judge_speed(record: SpeedRecord, precision: float) -> list[str]:
    """Judge the whole record again against the run's ``precision``: its warnings, largest first.
    A move beyond it is a warning when the drift within one pair (``within_pair``) is beyond it too
    or unknown; when the drift falls between pairs, the paired figures cancel it: a note."""
    record.precision = precision
    found: list[tuple[float, str]] = []
    record.notes = []
    move = largest_move([tps for _, tps in record.series()])
    short = short_readings(record)
    if move is not None and short is not None:  # readings too short to time: said, never judged
        if abs(move[0]) > precision:
            record.notes.append(
                f"{moved_message(*move)}, but each reading decoded for {short * 1000:.0f} ms, too short "
                "to tell a move of the machine from timing noise; not judged (the samples' own decode "
                "windows say how precise they are)"
            )
        move = None
    drift = within_pair(record)
    if move is not None and drift is not None and abs(move[0]) > precision:
        span = f"within a pair ({record.pair_s:.0f} s)"
        if drift > precision:
            found.append((move[0], f"{moved_message(*move)}, up to {drift:.0%} {span}: inside pairs"))
        else:
            record.notes.append(
                f"{moved_message(*move)}, between pairs: at most {drift:.1%} {span}, which the paired "
                "figures (speedups, ab's ratios) cancel; absolute t/s carry it"
            )
    elif move is not None:
        found.append((move[0], moved_message(*move)))
    for w in record.windows:
        where = f"between the baseline windows of {w.group}"
        found.append((w.moved, moved_message(w.moved, w.before_tps, w.after_tps, where)))
    moves = [m for m, _ in found] + ([move[0]] if move is not None else [])
    record.moved = max(moves, key=abs) if moves else None
    record.warnings = [text for m, text in sorted(found, key=lambda f: -abs(f[0])) if abs(m) > precision]
    return record.warnings


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

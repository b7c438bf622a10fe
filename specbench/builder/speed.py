"""Did the machine's own speed move during the run? The speed sentinel's record and its judgement.

The noise check (``specbench.builder.noise``) sees other work on the machine; it cannot see a host
that gets slower by itself (a VM's phases, a neighbour on the same physical cores, clocks). The
sentinel sees that: it re-measures one fixed reference (a short decode of the run's first target,
``specbench.execute.sentinel``) at the start, at intervals and at the end, and the server runner
adds the baseline windows it measures before and after each group's speculative servers. A move
between two readings beyond the run's precision is the warning ``machine speed moved by X% during
the run (from A to B t/s)``. These records live here, beside the noise record that holds them.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class SpeedReading(BaseModel):
    """One measurement of the reference."""

    phase: str  # before | during | after
    at: str  # ISO time it started
    tps: float | None = None  # decode t/s (None: the reading failed; the reason is in ``error``)
    wall_s: float = 0.0  # what it cost, model load included
    error: str | None = None


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

    def cost_s(self) -> float:
        return sum(r.wall_s for r in self.readings)

    def describe(self, run_s: float | None = None) -> str | None:
        """One line for the end of a run: what was read, its range, and what it cost."""
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


def moved_message(move: float, a: float, b: float, where: str = "during the run") -> str:
    return f"machine speed moved by {move:+.0%} {where} (from {a:.1f} to {b:.1f} t/s)"


def judge_speed(record: SpeedRecord, precision: float) -> list[str]:
    """Judge the whole record again against ``precision`` (the run's): its warnings, the moves
    beyond it, largest first (a later reading may show a larger move than an earlier verdict)."""
    record.precision = precision
    found: list[tuple[float, str]] = []
    move = largest_move([tps for _, tps in record.series()])
    if move is not None:
        found.append((move[0], moved_message(*move)))
    for w in record.windows:
        where = f"between the baseline windows of {w.group}"
        found.append((w.moved, moved_message(w.moved, w.before_tps, w.after_tps, where)))
    record.moved = max((m for m, _ in found), key=abs) if found else None
    record.warnings = [text for m, text in sorted(found, key=lambda f: -abs(f[0])) if abs(m) > precision]
    return record.warnings

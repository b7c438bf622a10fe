"""The speed sentinel: one fixed reference re-measured at the start, at intervals and at the end.

The reference is ``Plan.sentinel``: a 64-token decode of the run's first target, first prompt, with
llama-completion (the same for both runners, so ``runner: server`` needs no server of its own for
it). Its decode t/s is the machine's speed; the series goes into the manifest (``noise.speed``,
``specbench.builder.speed``) and a move beyond the run's precision is a warning, with ``--strict``
an error (``SpeedMoved``). A reading costs about one baseline sample; the readings in the middle
are spaced so that they take at most ``SHARE`` of the time between them, never closer than
``MIN_INTERVAL_S``. Its raw logs go to ``<run>/sentinel/raw/``, apart from the samples'.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.base.errors import RunError
from specbench.builder.speed import SpeedReading, SpeedRecord, judge_speed
from specbench.execute.executor import ProcessExecutor
from specbench.execute.judge import judge
from specbench.results.bracket import baseline_windows
from specbench.results.cell import baseline_of
from specbench.results.folder import has_samples
from specbench.results.manifest import now_iso
from specbench.results.samplelog import load_samples

if TYPE_CHECKING:
    from specbench.plan.invocation import Invocation
    from specbench.results.records import Sample

SHARE = 0.025  # of the run's time the readings between start and end may take
MIN_INTERVAL_S = 30.0  # never closer than this (a short run gets its start and end readings only)
FOLDER = "sentinel"


class SpeedMoved(RunError):
    """--strict and the sentinel saw the machine's own speed move beyond the run's precision."""


def strict_message(warning: str) -> str:
    return (
        f"{warning}; --strict refuses numbers measured while the machine's speed moves "
        "(measure again when the host is steady, or run without --strict to measure with a warning)"
    )


class Sentinel:
    """Reads the reference when asked (``read``) or when due (``maybe``), into ``record``."""

    def __init__(
        self,
        inv: Invocation | None,
        run_dir: Path,
        record: SpeedRecord,
        precision: float,
        run_id: str = "",
        off: bool = False,
    ):
        self.inv, self.run_dir, self.record, self.precision = inv, Path(run_dir), record, precision
        record.off = record.off or off  # `sentinel: false` (kept on a resumed run's record)
        self.run_id = run_id
        self.executor = ProcessExecutor()
        self.last = time.monotonic()
        self.interval = MIN_INTERVAL_S
        if inv is not None and record.reference is None:
            record.reference = f"{inv.model} alone, {inv.generation.n_predict} tokens of {inv.prompt_id}"

    def read(self, phase: str) -> SpeedReading | None:
        """One reading now (None: no reference, a plan without a baseline), then the verdict; at the
        end the server runner's baseline windows join it."""
        reading = self._measure(phase) if self.inv is not None else None
        if has_samples(self.run_dir):
            samples = load_samples(self.run_dir)
            self.record.pair_s = pair_span_s(samples)
            if phase == "after":
                self.record.windows = baseline_windows(samples)
        judge_speed(self.record, self.precision)
        return reading

    def _measure(self, phase: str) -> SpeedReading:
        assert self.inv is not None
        folder = self.run_dir / FOLDER
        at, start = now_iso(), time.monotonic()
        try:
            (folder / "raw").mkdir(parents=True, exist_ok=True)
            outcome = self.executor.run([(len(self.record.readings), self.inv)], folder)[0]
            sample = judge(self.inv, outcome, self.run_id, at).sample
            tps = sample.tps if sample.status == "ok" else None
            error = None if tps is not None else (sample.invalid_reason or sample.status)
        except (OSError, RunError) as exc:  # the sentinel must never cost the run its samples
            tps, error = None, f"{type(exc).__name__}: {exc}"
        wall = time.monotonic() - start
        reading = SpeedReading(phase=phase, at=at, tps=tps, wall_s=round(wall, 3), error=error)
        self.record.readings.append(reading)
        self.last = time.monotonic()
        self.interval = max(MIN_INTERVAL_S, wall / SHARE)
        return reading

    def last_wall(self) -> float:
        """What the last reading took: the price of the next one (0 before any)."""
        return self.record.readings[-1].wall_s if self.inv is not None and self.record.readings else 0.0

    def due(self) -> bool:
        return self.inv is not None and time.monotonic() - self.last >= self.interval

    def maybe(self) -> SpeedReading | None:
        return self.read("during") if self.due() else None


def pair_span_s(samples: Sequence[Sample]) -> float | None:
    """How long one pair of the run spans, the median over its pairs (first start to last end):
    the builds' samples of one cell, prompt and repetition, and each speculative sample with its
    baseline. A drift of the machine's speed within that time biases the pair; between pairs, the
    pair cancels it (``specbench.builder.speed.within_pair``). None: no pair measured yet."""
    groups: dict[tuple, list[tuple[float, float]]] = {}
    baselines: dict[tuple, tuple[float, float]] = {}
    speculative: list[tuple[tuple, tuple[float, float]]] = []
    for s in samples:
        try:
            start = datetime.fromisoformat(s.started_at).timestamp()
        except ValueError:
            continue
        span = (start, start + s.wall_s)
        groups.setdefault(s.model_copy(update={"build": None}).sample_key(), []).append(span)
        key = (baseline_of(s), s.prompt_id, s.repetition)
        if s.role == "baseline":
            baselines[key] = span
        elif s.role == "speculative":
            speculative.append((key, span))
    pairs = [g for g in groups.values() if len(g) > 1]
    pairs += [[baselines[key], span] for key, span in speculative if key in baselines]
    spans = [max(e for _, e in g) - min(b for b, _ in g) for g in pairs]
    return round(statistics.median(spans), 3) if spans else None

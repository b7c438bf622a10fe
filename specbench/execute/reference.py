"""The speed sentinel's reading (``specbench.machine.speed.Sentinel`` decides when): ``Plan.sentinel`` run
by the process executor into ``<run>/sentinel/raw/`` and judged like a sample; and what the run's
samples tell the sentinel (how long a pair spans; at the end the baseline windows).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.base.formats import now_iso
from specbench.execute.executor import ProcessExecutor
from specbench.execute.judge import judge
from specbench.machine.speed import Sentinel, SpeedRecord
from specbench.results.bracket import baseline_windows
from specbench.results.cell import baseline_of
from specbench.results.folder import has_samples
from specbench.results.samplelog import load_samples

if TYPE_CHECKING:
    from specbench.plan.invocation import Invocation
    from specbench.results.records import Sample

FOLDER = "sentinel"


def sentinel(
    inv: Invocation | None,
    run_dir: Path,
    record: SpeedRecord,
    precision: float,
    run_id: str = "",
    off: bool = False,
) -> Sentinel:
    """The run's sentinel: ``inv`` its reference (None: a plan without a baseline, no readings)."""
    executor = ProcessExecutor()

    def measure(index: int) -> tuple[float | None, str | None, float | None]:
        assert inv is not None
        folder = run_dir / FOLDER
        (folder / "raw").mkdir(parents=True, exist_ok=True)
        outcome = executor.run([(index, inv)], folder)[0]
        sample = judge(inv, outcome, run_id, now_iso()).sample
        tps = sample.tps if sample.status == "ok" else None
        return tps, None if tps is not None else (sample.invalid_reason or sample.status), sample.span_s

    def pairs(speed: SpeedRecord, phase: str) -> None:
        if has_samples(run_dir):
            samples = load_samples(run_dir)
            speed.pair_s = pair_span_s(samples)
            if phase == "after":
                speed.windows = baseline_windows(samples)

    reference = f"{inv.model} alone, {inv.generation.n_predict} tokens of {inv.prompt_id}" if inv else None
    return Sentinel(measure if inv is not None else None, record, precision, reference, off, pairs)


def pair_span_s(samples: Sequence[Sample]) -> float | None:
    """How long one pair of the run spans, the median over its pairs (first start to last end): the
    builds' samples of one cell, prompt and repetition, and each speculative sample with its
    baseline (``machine.speed.within_pair``). None: no pair measured yet."""
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

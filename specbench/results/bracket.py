"""The server runner's bracketed baseline: measured before and after a group's speculative servers
(A B A), and which of the two windows a speculative cell is judged against.

A speed change between a baseline window and a speculative server would go straight into a speedup;
the window after (role ``baseline-after``) shows it, and each cell takes the window nearer in time.
A/B/A needs no second copy of the target in memory and keeps each server alone while it is timed.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from specbench.base.formats import epoch_seconds
from specbench.machine.speed import BaselineWindows
from specbench.results import cell
from specbench.results.records import Sample

AFTER = "baseline-after"  # the role of the window after the speculative servers


def _middle(samples: Iterable[Sample]) -> float | None:
    """The median time the samples started at (a hand-edited, unreadable time left out)."""
    times = [t for s in samples if (t := epoch_seconds(s.started_at)) is not None]
    return statistics.median(times) if times else None


def _keyed(samples: Iterable[Sample]) -> dict[tuple, float]:
    return {(s.prompt_id, s.repetition): s.tps for s in samples if s.usable and s.tps is not None}


def window_means(before: Sequence[Sample], after: Sequence[Sample]) -> tuple[float, float] | None:
    """Mean t/s of each window over the prompts and repetitions both measured (None: none in common)."""
    a, b = _keyed(before), _keyed(after)
    common = sorted(set(a) & set(b))
    if not common:
        return None
    return statistics.fmean(a[k] for k in common), statistics.fmean(b[k] for k in common)


def baseline_windows(samples: Sequence[Sample]) -> list[BaselineWindows]:
    """Every bracketed baseline of a run: its two windows' mean t/s (for the speed verdict)."""
    before = cell.group_by((s for s in samples if s.role == "baseline"), cell.baseline_of)
    after = cell.group_by((s for s in samples if s.role == AFTER), cell.baseline_of)
    out = []
    for key, late in after.items():
        means = window_means(before.get(key, []), late)
        if means is not None and means[0] > 0:
            group = " ".join([late[0].model, *cell.label_parts(late[0])])
            out.append(BaselineWindows(group=group, before_tps=means[0], after_tps=means[1]))
    return out


def nearer(spec: Sequence[Sample], before: list[Sample], after: list[Sample]) -> tuple[list[Sample], bool]:
    """The baseline window nearer in time to the cell's samples, and whether it is the after one
    (only when it covers every prompt and repetition of the before one: a run may stop short)."""
    keys = {(s.prompt_id, s.repetition) for s in before}
    if not after or not keys <= {(s.prompt_id, s.repetition) for s in after}:
        return before, False
    mid, t0, t1 = _middle(spec), _middle(before), _middle(after)
    if mid is None or t0 is None or t1 is None or abs(mid - t1) >= abs(mid - t0):
        return before, False
    return after, True


@dataclass(frozen=True)
class Judged:
    """A speculative cell's baseline windows: the one judged (``nearer``), before, after, and which won."""

    base: list[Sample]
    before: list[Sample]
    late: list[Sample]
    is_after: bool


def judged_baselines(samples: Sequence[Sample]) -> dict[tuple, Judged]:
    """Each speculative cell's baseline samples over the prompts and repetitions it ran, from the
    window nearer in time: the one rule report, compare, history, publish and tune pair by."""
    cells = cell.group_by((s for s in samples if s.role == "speculative"), cell.cell_of)
    before = cell.group_by((s for s in samples if s.role == "baseline"), cell.baseline_of)
    after = cell.group_by((s for s in samples if s.role == AFTER), cell.baseline_of)
    out: dict[tuple, Judged] = {}
    for key, spec in cells.items():
        keys = {(s.prompt_id, s.repetition) for s in spec}
        base_key = cell.baseline_of(spec[0])
        early = [b for b in before.get(base_key, []) if (b.prompt_id, b.repetition) in keys]
        late = [b for b in after.get(base_key, []) if (b.prompt_id, b.repetition) in keys]
        base, is_after = nearer(spec, early, late)
        out[key] = Judged(base, early, late, is_after)
    return out


def paired_baseline(samples: Sequence[Sample]) -> dict[tuple, Sample]:
    """Each speculative sample's baseline (by its ``sample_key``): the first usable one of its prompt
    and repetition in the judged window; a speedup is the ratio of the two, wherever shown."""
    judged = judged_baselines(samples)
    out: dict[tuple, Sample] = {}
    for s in samples:
        if s.role != "speculative":
            continue
        window = judged[cell.cell_of(s)].base
        match = next(
            (b for b in window if (b.prompt_id, b.repetition) == (s.prompt_id, s.repetition) and b.usable),
            None,
        )
        if match is not None:
            out[cell.sample_key(s)] = match
    return out


def speedup_ratio(spec: Sample, base: Sample | None) -> float | None:
    """One sample's speedup: its t/s over its paired baseline's, when both were measured."""
    if base is None or not spec.usable or not base.usable or not spec.tps or not base.tps:
        return None
    return spec.tps / base.tps

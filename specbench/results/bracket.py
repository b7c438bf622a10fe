"""The server runner's bracketed baseline: each setting group's baseline measured before and after
its speculative servers (A B A), and which of the two windows a speculative cell is judged against.

The server runner measures every request of one server in a row, so a change of the machine's speed
between the baseline's window and a speculative server's would go straight into that cell's
speedup. Re-measuring the baseline after the speculative servers (role ``baseline-after``, the same
requests, its own server start and warmup) shows such a change, and each cell is compared with the
window nearer to it in time. A/B/A rather than two servers side by side: it needs no second copy
of the target in memory (a GPU often holds only one) and keeps each server alone on the machine
while it is timed, as the process runner does; its cost is one more baseline window per group.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from datetime import datetime

from specbench.builder.speed import BaselineWindows
from specbench.results import cell
from specbench.results.records import Sample

AFTER = "baseline-after"  # the role of the window after the speculative servers


def _usable(s: Sample) -> bool:
    return s.valid and s.status == "ok" and s.tps is not None


def _time(s: Sample) -> float | None:
    try:
        return datetime.fromisoformat(s.started_at).timestamp()
    except ValueError:
        return None


def _middle(samples: Iterable[Sample]) -> float | None:
    times = [t for t in map(_time, samples) if t is not None]
    return statistics.median(times) if times else None


def _keyed(samples: Iterable[Sample]) -> dict[tuple, float]:
    return {(s.prompt_id, s.repetition): s.tps for s in samples if _usable(s)}  # type: ignore[misc]


def window_means(before: Sequence[Sample], after: Sequence[Sample]) -> tuple[float, float] | None:
    """Mean t/s of each window over the prompts and repetitions both measured (None: none in common)."""
    a, b = _keyed(before), _keyed(after)
    common = sorted(set(a) & set(b))
    if not common:
        return None
    return statistics.fmean(a[k] for k in common), statistics.fmean(b[k] for k in common)


def group_name(s: Sample) -> str:
    return " ".join([s.model, *cell.label_parts(s)])


def baseline_windows(samples: Sequence[Sample]) -> list[BaselineWindows]:
    """Every bracketed baseline of a run: its two windows' mean t/s (for the speed verdict)."""
    before: dict[tuple, list[Sample]] = {}
    after: dict[tuple, list[Sample]] = {}
    for s in samples:
        if s.role in ("baseline", AFTER):
            (after if s.role == AFTER else before).setdefault(cell.baseline_of(s), []).append(s)
    out = []
    for key, late in after.items():
        means = window_means(before.get(key, []), late)
        if means is not None and means[0] > 0:
            out.append(BaselineWindows(group=group_name(late[0]), before_tps=means[0], after_tps=means[1]))
    return out


def nearer(spec: Sequence[Sample], before: list[Sample], after: list[Sample]) -> tuple[list[Sample], bool]:
    """The baseline window measured nearer in time to the cell's samples, and whether it is the
    after window. The after window serves only when it covers every prompt and repetition the
    before window has for this cell (an interrupted run may lack some)."""
    keys = {(s.prompt_id, s.repetition) for s in before}
    if not after or not keys <= {(s.prompt_id, s.repetition) for s in after}:
        return before, False
    mid, t0, t1 = _middle(spec), _middle(before), _middle(after)
    if mid is None or t0 is None or t1 is None or abs(mid - t1) >= abs(mid - t0):
        return before, False
    return after, True

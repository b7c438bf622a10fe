"""Tune's figure against this machine's other minutes: its baseline beside the same baseline in history.

A later run can find the baseline at another level than tune's few minutes saw (docs/tune.md), and
a speedup moves with it. This machine's history has the same baseline from other runs: the range of
their levels, applied to tune's speedup, is what a later run may measure if the spec t/s holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specbench.gate.baseline import load_run
from specbench.gate.history import HistoryPoint, load_history, series_of
from specbench.gate.historydb import record_run


@dataclass(frozen=True)
class BaselineDrift:
    runs: int  # other runs of this machine that measured the same baseline
    low_tps: float  # the lowest and highest of their baseline t/s (mean over prompts and repetitions)
    high_tps: float
    tune_tps: float  # tune's own, measured the same way
    speedup_low: float  # the best setting's speedup at those two levels, if its spec t/s held
    speedup_high: float

    def outside(self, ci_low: float | None, ci_high: float | None) -> bool:
        """Whether those levels put the speedup beyond tune's own interval (then tune says so)."""
        if ci_low is None or ci_high is None:
            return True
        return self.speedup_low < ci_low or self.speedup_high > ci_high

    def widened(self, ci_low: float | None, ci_high: float | None) -> tuple[float, float]:
        """Tune's interval widened to the speedup at those levels: what a later run here may measure."""
        low = min(x for x in (ci_low, self.speedup_low) if x is not None)
        return low, max(x for x in (ci_high, self.speedup_high) if x is not None)


def record_and_compare(
    run_dir: Path, speedup: float | None, db_path: Path | None = None, notes: list[str] | None = None
) -> BaselineDrift | None:
    """Record tune's run in history (as ``run`` records its runs) and compare its baseline with the
    same baseline's other runs there; None when history has none or tune measured no speedup."""
    record_run(run_dir, db_path, notes)
    facts = load_run(run_dir).facts
    points = load_history(db_path, "baseline_tps")
    mine = [p for p in points if p.run_id == facts.run_id and p.started_at == facts.started_at]
    if speedup is None or len(mine) != 1 or mine[0].mean <= 0:
        return None
    tune_point = mine[0]

    def identity(p: HistoryPoint) -> tuple:  # history's series, and the same threads and llama.cpp build
        return (*series_of(p), p.threads, p.commit)

    others = [
        p.mean for p in points if p is not tune_point and identity(p) == identity(tune_point) and p.mean > 0
    ]
    if not others:
        return None
    low, high = min(others), max(others)
    b = tune_point.mean
    return BaselineDrift(len(others), low, high, b, speedup * b / high, speedup * b / low)

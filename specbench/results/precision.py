"""How precise a cell's measured mean is, and which repetitions stand out: shared by ``repetitions:
auto`` (execute), the report's quality columns (analysis) and compare (gate).

* **Precision**: the 95% CI half-width over the mean. The prompts are a fixed set, so only repetition
  noise counts: a stratified mean, variance sum(s_p^2 / n_p) / P^2, Welch-Satterthwaite df.
* **Outliers**: modified z-score 0.6745 (x - median) / MAD above 3.5 within a prompt (Iglewicz and
  Hoaglin 1993); robust with as few as 3 values.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from specbench.base.stats import CONFIDENCE, t_quantile, variance

OUTLIER_Z = 3.5
MIN_FOR_OUTLIERS = 3


@dataclass(frozen=True)
class Precision:
    """A mean over prompt groups with its 95% CI half-width (None when a group has < 2 values)."""

    mean: float | None
    half_width: float | None
    n_min: int  # fewest values in any group

    @property
    def relative(self) -> float | None:
        if self.half_width is None or not self.mean:
            return None
        return self.half_width / abs(self.mean)

    def meets(self, target: float) -> bool:
        return self.relative is not None and self.relative <= target


def stratified(groups: Sequence[Sequence[float]], confidence: float = CONFIDENCE) -> Precision:
    """The mean of the groups' means and its CI half-width from the within-group spread."""
    groups = [list(g) for g in groups if len(g) > 0]
    if not groups:
        return Precision(None, None, 0)
    n_min = min(len(g) for g in groups)
    mean = statistics.fmean(statistics.fmean(g) for g in groups)
    if n_min < 2:
        return Precision(mean, None, n_min)
    v = [variance(g) / len(g) for g in groups]
    total = math.fsum(v)
    if total == 0:
        return Precision(mean, 0.0, n_min)
    df = total**2 / math.fsum(vi**2 / (len(g) - 1) for vi, g in zip(v, groups, strict=True) if vi > 0)
    half = t_quantile(df, confidence) * math.sqrt(total) / len(groups)
    return Precision(mean, half, n_min)


def outliers(values: Sequence[float], z: float = OUTLIER_Z) -> list[int]:
    """Indices of values whose modified z-score exceeds ``z`` (none below 3 values or with MAD 0)."""
    if len(values) < MIN_FOR_OUTLIERS:
        return []
    med = statistics.median(values)
    mad = statistics.median([abs(x - med) for x in values])
    if mad == 0:
        return []
    return [i for i, x in enumerate(values) if 0.6745 * abs(x - med) / mad > z]

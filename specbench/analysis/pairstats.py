"""The paired statistics under ``specbench ab`` and the report's speedup: a centre of pair
differences with its 95% interval, deterministic and robust to an outlier.

Pure functions over floats, no I/O. The choices (Hodges-Lehmann estimate, Wilcoxon signed-rank
interval from ``MIN_PAIRS`` pairs, the t interval of the mean below that, none from one pair) are
argued in ``specbench.gate.paired``, which decides A/B verdicts with them; they live here, below
the gate, so the report (``specbench.analysis.speedup``) uses the very same rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from pydantic import BaseModel

from specbench.analysis.stats import summarize

CONFIDENCE = 0.95
MIN_PAIRS = 6  # the fewest pairs whose signed-rank interval reaches 95% (1 - 2/2^6 = 96.9%)
EXACT_UP_TO = 200  # pairs; beyond this the signed-rank distribution is taken as normal


class Interval(BaseModel):
    """A location estimate of pair differences with its interval (same scale as the differences)."""

    n: int
    estimate: float
    low: float | None  # None: too few pairs for the asked confidence
    high: float | None
    confidence: float | None  # the interval's exact coverage (>= the asked one), None with no interval
    p_value: float  # two-sided signed-rank test of "no change"


def walsh_averages(d: Sequence[float]) -> list[float]:
    n = len(d)
    return sorted((d[i] + d[j]) / 2.0 for i in range(n) for j in range(i, n))


def hodges_lehmann(d: Sequence[float]) -> float:
    """The median of the Walsh averages: a robust, efficient centre of symmetric differences."""
    if not d:
        raise ValueError("no differences")
    w = walsh_averages(d)
    m = len(w)
    return w[m // 2] if m % 2 else (w[m // 2 - 1] + w[m // 2]) / 2.0


@lru_cache(maxsize=512)
def _signed_rank_cdf(n: int) -> tuple[float, ...]:
    """P(T+ <= t) for t = 0 .. n(n+1)/2 under the null (each rank's sign a fair coin)."""
    total = n * (n + 1) // 2
    counts = [0] * (total + 1)
    counts[0] = 1
    top = 0
    for r in range(1, n + 1):
        top += r
        for s in range(top, r - 1, -1):
            counts[s] += counts[s - r]
    scale = 2.0**n
    cdf, acc = [], 0
    for c in counts:
        acc += c
        cdf.append(acc / scale)
    return tuple(cdf)


def _critical(n: int, confidence: float) -> tuple[int, float] | None:
    """The largest c with P(T+ <= c - 1) <= alpha/2, and the interval's exact coverage; None if
    no interval reaches ``confidence`` with n pairs."""
    half = (1.0 - confidence) / 2.0
    if n > EXACT_UP_TO:
        from scipy.stats import norm

        mu, sd = n * (n + 1) / 4.0, math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        c = int(math.floor(mu - norm.ppf(1 - half) * sd))  # P(T+ <= c-1) ~ alpha/2, continuity included
        return (c, confidence) if c >= 1 else None
    cdf = _signed_rank_cdf(n)
    c = 0
    while c < len(cdf) and cdf[c] <= half:  # cdf[c] = P(T+ <= c)
        c += 1
    if c == 0:
        return None
    return c, 1.0 - 2.0 * cdf[c - 1]


def signed_rank_p(d: Sequence[float]) -> float:
    """Two-sided p of the Wilcoxon signed-rank test of "no change" (zeros dropped, 1.0 when all
    are zero): exact without ties, else the normal approximation with the tie correction."""
    nonzero = [x for x in d if x != 0]
    n = len(nonzero)
    if not n:
        return 1.0
    from scipy.stats import norm, rankdata

    ranks = rankdata([abs(x) for x in nonzero])
    t_plus = float(sum(r for r, x in zip(ranks, nonzero, strict=True) if x > 0))
    ties = len(set(ranks)) < n
    if not ties and n <= EXACT_UP_TO:
        cdf = _signed_rank_cdf(n)
        t = int(round(t_plus))
        lower = cdf[t]  # P(T+ <= t)
        upper = cdf[len(cdf) - 1 - t]  # P(T+ >= t) = P(T+ <= M - t) by symmetry
        return min(1.0, 2.0 * min(lower, upper))
    counts: dict[float, int] = {}
    for r in ranks:
        counts[r] = counts.get(r, 0) + 1
    mu = n * (n + 1) / 4.0
    var = n * (n + 1) * (2 * n + 1) / 24.0 - sum(c**3 - c for c in counts.values()) / 48.0
    if var <= 0:
        return 1.0
    z = max(abs(t_plus - mu) - 0.5, 0.0) / math.sqrt(var)
    return min(1.0, float(2.0 * norm.sf(z)))


def interval(d: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """HL estimate, signed-rank interval and p of the differences ``d``."""
    d = [float(x) for x in d]
    if not d:
        raise ValueError("no differences")
    if not all(math.isfinite(x) for x in d):
        raise ValueError("differences must be finite")
    n = len(d)
    est = hodges_lehmann(d)
    crit = _critical(n, confidence)
    p = signed_rank_p(d)
    if crit is None:
        return Interval(n=n, estimate=est, low=None, high=None, confidence=None, p_value=p)
    c, coverage = crit
    w = walsh_averages(d)
    return Interval(n=n, estimate=est, low=w[c - 1], high=w[len(w) - c], confidence=coverage, p_value=p)


def t_interval(d: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Mean of the differences with its t interval and two-sided p (for 2 to MIN_PAIRS - 1 pairs,
    where no signed-rank interval reaches ``confidence``); no interval for one pair."""
    from scipy.stats import t as student

    from specbench.results.precision import t_quantile

    n = len(d)
    s = summarize(d)
    mean, sd = s.mean, s.sd
    if sd is None:  # one pair
        return Interval(n=n, estimate=mean, low=None, high=None, confidence=None, p_value=1.0)
    se = sd / math.sqrt(n)
    reach = t_quantile(n - 1, confidence) * se
    p = 1.0 if mean == 0 else (0.0 if se == 0 else float(2 * student.sf(abs(mean) / se, n - 1)))
    return Interval(n=n, estimate=mean, low=mean - reach, high=mean + reach, confidence=confidence, p_value=p)


def log_ratios(base: Sequence[float], head: Sequence[float]) -> list[float]:
    """log(head/base) per pair; pairs with a non-positive or non-finite side are dropped."""
    if len(base) != len(head):
        raise ValueError("base and head need one value per pair")
    return [
        math.log(h / b)
        for b, h in zip(base, head, strict=True)
        if b > 0 and h > 0 and math.isfinite(b) and math.isfinite(h)
    ]

"""The statistics every layer shares, each defined once: t intervals, Welch's difference of means,
and the paired estimate and interval of differences (pure functions over floats).

Intervals are two-sided at ``confidence`` (95%). Paired differences: the Hodges-Lehmann estimate
with the Wilcoxon signed-rank interval from ``MIN_PAIRS`` pairs, the t interval below that, none
from one pair (argued in ``specbench.gate.paired``)."""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from pydantic import BaseModel, Field

CONFIDENCE = 0.95
MIN_PAIRS = 6  # the fewest pairs whose signed-rank interval reaches 95% (1 - 2/2^6 = 96.9%)
EXACT_UP_TO = 200  # pairs; beyond this the signed-rank distribution is taken as normal


@lru_cache(maxsize=4096)
def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """The t quantile of a two-sided ``confidence`` interval (cached: a history asks thousands of
    times), from scipy.special: importing scipy.stats costs a `specbench run` a second."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + confidence / 2))


def variance(values: Sequence[float]) -> float:
    """The sample variance (n - 1) of two or more values. Not ``statistics.variance``: its exact
    rounding moves the last digit of recorded numbers, and it is about 30 times slower."""
    mean = statistics.fmean(values)
    return math.fsum((x - mean) ** 2 for x in values) / (len(values) - 1)


@dataclass(frozen=True)
class Summary:
    """Mean, sample sd and 95% t interval of one set of measurements (sd/CI None when n < 2)."""

    n: int
    mean: float | None
    sd: float | None
    ci_low: float | None
    ci_high: float | None


def summarize(values: Sequence[float], confidence: float = CONFIDENCE) -> Summary:
    """Mean, sd (n - 1 denominator) and t interval; non-finite values are a caller bug."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return Summary(0, None, None, None, None)
    mean = statistics.fmean(xs)
    if n == 1:
        return Summary(1, mean, None, None, None)
    sd = math.sqrt(variance(xs))
    half = t_quantile(n - 1, confidence) * sd / math.sqrt(n)
    return Summary(n, mean, sd, mean - half, mean + half)


def welch(
    a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """mean(b) - mean(a) and the half-width of its Welch interval; None with under 2 values a side."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = variance(a) / len(a), variance(b) / len(b)
    diff = statistics.fmean(b) - statistics.fmean(a)
    if va + vb == 0:
        return diff, 0.0
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return diff, t_quantile(df, confidence) * math.sqrt(va + vb)


class Interval(BaseModel):
    """A location estimate of pair differences with its interval (same scale as the differences)."""

    n: int
    estimate: float
    low: float | None  # None: too few pairs for the asked confidence
    high: float | None
    confidence: float | None  # the interval's exact coverage (>= the asked one), None with no interval
    # for ``p_value``, computed when first read: the signed-rank test imports scipy.stats (a second)
    differences: tuple[float, ...] = Field(exclude=True, repr=False)
    signed_rank: bool = Field(exclude=True, repr=False)  # False: the t test (``t_interval``)

    @cached_property
    def p_value(self) -> float:
        """Two-sided p of "no change"."""
        return signed_rank_p(self.differences) if self.signed_rank else t_test_p(self.differences)


def walsh_averages(d: Sequence[float]) -> list[float]:
    n = len(d)
    return sorted((d[i] + d[j]) / 2.0 for i in range(n) for j in range(i, n))


def hodges_lehmann(d: Sequence[float]) -> float:
    """The median of the Walsh averages: a robust, efficient centre of symmetric differences."""
    if not d:
        raise ValueError("no differences")
    return statistics.median(walsh_averages(d))


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
    return tuple(acc / scale for acc in itertools.accumulate(counts))


def _critical(n: int, confidence: float) -> tuple[int, float] | None:
    """The largest c with P(T+ <= c - 1) <= alpha/2 and its exact coverage; None: none reaches it."""
    half = (1.0 - confidence) / 2.0
    if n > EXACT_UP_TO:
        from scipy.special import ndtri  # the normal quantile (scipy.stats.norm.ppf)

        mu, sd = n * (n + 1) / 4.0, math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        c = int(math.floor(mu - ndtri(1 - half) * sd))  # P(T+ <= c-1) ~ alpha/2, continuity included
        return (c, confidence) if c >= 1 else None
    cdf = _signed_rank_cdf(n)  # cdf[c] = P(T+ <= c), rising
    c = bisect.bisect_right(cdf, half)
    return None if c == 0 else (c, 1.0 - 2.0 * cdf[c - 1])


def signed_rank_p(d: Sequence[float]) -> float:
    """Two-sided p of the Wilcoxon signed-rank test of "no change" (zeros dropped, 1.0 when all
    are zero): exact without ties up to ``EXACT_UP_TO`` pairs, else the normal approximation with
    the tie and continuity corrections."""
    from scipy.stats import wilcoxon

    nonzero = [x for x in d if x != 0]
    if not nonzero:
        return 1.0
    exact = len(nonzero) <= EXACT_UP_TO and len({abs(x) for x in nonzero}) == len(nonzero)
    return float(wilcoxon(nonzero, method="exact" if exact else "approx", correction=True).pvalue)


def interval(d: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """HL estimate, signed-rank interval and p of the differences ``d``; where too few differences
    for a signed-rank interval at ``confidence``, their mean and t interval (``t_interval``)."""
    d = [float(x) for x in d]
    if not all(math.isfinite(x) for x in d):
        raise ValueError("differences must be finite")
    n = len(d)
    est = hodges_lehmann(d)  # raises on no differences
    crit = _critical(n, confidence)
    if crit is None:
        return t_interval(d, confidence)
    c, coverage = crit
    w = walsh_averages(d)
    test = {"differences": tuple(d), "signed_rank": True}
    return Interval(n=n, estimate=est, low=w[c - 1], high=w[len(w) - c], confidence=coverage, **test)


def t_interval(d: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Mean of the differences with its t interval, where no signed-rank interval reaches it."""
    n = len(d)
    s = summarize(d)
    mean, sd = s.mean, s.sd
    test = {"differences": tuple(float(x) for x in d), "signed_rank": False}
    if sd is None or mean is None:  # one pair
        return Interval(n=n, estimate=mean, low=None, high=None, confidence=None, **test)
    reach = t_quantile(n - 1, confidence) * (sd / math.sqrt(n))  # t x standard error
    return Interval(n=n, estimate=mean, low=mean - reach, high=mean + reach, confidence=confidence, **test)


def t_test_p(d: Sequence[float]) -> float:
    """Two-sided p of the one-sample t test of "no change" (1.0 for one pair or a zero mean)."""
    from scipy.special import stdtr  # the t CDF (scipy.stats.t.cdf)

    s = summarize(d)
    if s.sd is None or s.mean is None or s.mean == 0:
        return 1.0
    se = s.sd / math.sqrt(s.n)
    return 0.0 if se == 0 else float(2 * stdtr(s.n - 1, -abs(s.mean) / se))


def log_ratios(base: Sequence[float], head: Sequence[float]) -> list[float]:
    """log(head/base) per pair; pairs with a non-positive or non-finite side are dropped."""
    return [
        math.log(h / b)
        for b, h in zip(base, head, strict=True)
        if b > 0 and h > 0 and math.isfinite(b) and math.isfinite(h)
    ]

"""A report row's speedup: paired ratios, the prompts weighted equally, an interval from repetitions.

Each speculative sample is paired with the baseline of its own prompt and repetition (the two ran
minutes apart, so a slow spell of the machine touches both) and gives one log ratio
d(p, r) = log(spec t/s / baseline t/s). Prompts differ on purpose: an n-gram method can double the
speed of code that copies its prompt and leave a summary as it was. That spread is what the
setting does, not noise, so it is kept out of the interval and shown as the range of per-prompt
speedups instead.

* Per prompt p, m(p) = the mean of its d(p, r) over repetitions; exp(m(p)) is its speedup.
* Per repetition r, D(r) = S + mean over p of (d(p, r) - m(p)), with S = mean over p of m(p): the
  repetition's log speedup over the same prompts, each weighted equally (with every pair present
  it is simply mean over p of d(p, r)). The prompts' own effects cancel in it, so D(r) varies only
  with repetition noise.
* The speedup and its 95% interval are those of the D(r) by the paired rule ``specbench ab`` uses
  (``specbench.base.stats``): the mean and its t interval from 2 to 5 repetitions, the
  Hodges-Lehmann estimate and the signed-rank interval from 6. On the log scale then exponentiated,
  so both bounds are always above zero. With 2 to 5 repetitions and every pair present the speedup
  is exp(S): the geometric mean over prompts of each prompt's geometric mean over repetitions.
* One repetition gives no estimate of its noise: the speedup is exp(S) with no interval (``n=1``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from specbench.base.stats import interval, t_interval


@dataclass(frozen=True)
class Pair:
    """One speculative measurement and its baseline: same prompt, same repetition."""

    prompt: str
    repetition: int
    spec_tps: float
    base_tps: float


@dataclass(frozen=True)
class PairedSpeedup:
    value: float | None  # None: no pair with both sides measured
    ci_low: float | None  # None with fewer than 2 repetitions
    ci_high: float | None
    repetitions: int  # repetitions with at least one pair: the interval's n
    prompts: int  # prompts with at least one pair
    prompt_low: float | None  # the slowest and fastest prompt's speedup (None without a pair)
    prompt_high: float | None


NONE = PairedSpeedup(None, None, None, 0, 0, None, None)


def _mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return math.fsum(xs) / len(xs)


def paired_speedup(pairs: Iterable[Pair]) -> PairedSpeedup:
    """The speedup of the module docstring over ``pairs``; pairs with a non-positive or non-finite
    side are left out, several measurements of one (prompt, repetition) are averaged on the log scale."""
    logs: dict[tuple[str, int], list[float]] = {}
    for p in pairs:
        if min(p.spec_tps, p.base_tps) > 0 and math.isfinite(p.spec_tps) and math.isfinite(p.base_tps):
            logs.setdefault((p.prompt, p.repetition), []).append(math.log(p.spec_tps / p.base_tps))
    if not logs:
        return NONE
    d = {key: _mean(v) for key, v in logs.items()}
    by_prompt: dict[str, list[float]] = {}
    by_rep: dict[int, list[tuple[str, float]]] = {}
    for (prompt, rep), x in d.items():
        by_prompt.setdefault(prompt, []).append(x)
        by_rep.setdefault(rep, []).append((prompt, x))
    m = {prompt: _mean(xs) for prompt, xs in by_prompt.items()}
    s = _mean(m.values())
    per_rep = [s + _mean(x - m[prompt] for prompt, x in by_rep[rep]) for rep in sorted(by_rep)]
    low = high = None
    centre = s
    if len(per_rep) > 1:
        iv = interval(per_rep)
        if iv.low is None:  # fewer than MIN_PAIRS repetitions: the t interval, as `specbench ab`
            iv = t_interval(per_rep)
        centre = iv.estimate
        if iv.low is not None and iv.high is not None:  # always, from two repetitions on
            low, high = math.exp(iv.low), math.exp(iv.high)
    return PairedSpeedup(
        value=math.exp(centre), ci_low=low, ci_high=high, repetitions=len(per_rep), prompts=len(m),
        prompt_low=math.exp(min(m.values())), prompt_high=math.exp(max(m.values())),
    )  # fmt: skip

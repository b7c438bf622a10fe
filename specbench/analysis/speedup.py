"""A report row's speedup: paired ratios, the prompts weighted equally, an interval from repetitions.

Each speculative sample is paired with the baseline of its prompt and repetition. Prompts differ
on purpose (an n-gram method doubles the code that copies its prompt), so that spread is kept out
of the interval, which comes from repetition noise alone: docs/report-speedup.md gives the rule.
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
        return PairedSpeedup(None, None, None, 0, 0, None, None)
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

"""A cell's figure (its value and 95% interval) from its per-prompt, per-repetition values: the one
definition ``report``, ``compare``, ``history``, ``publish`` and ``tune`` show.

Speedups are the samples' ratios to the baseline ``results.bracket.paired_baseline`` pairs them
with, same prompt and repetition (``paired_speedup``), the prompts weighted equally: prompts differ
on purpose (an n-gram method doubles the code that copies its prompt), so that spread is kept out of
the interval, which comes from repetition noise alone. Every rate and ratio (a metric on the
``ratio`` scale, t/s included) is averaged as the speedup is (``paired_speedup`` against 1), so a
row's spec t/s over its baseline t/s is its speedup; an acceptance (``points`` scale) is the mean
over the samples with its t interval. Why one average: docs/report-speedup.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from statistics import fmean
from typing import Generic, TypeVar

from specbench.base.stats import interval, summarize
from specbench.results.metrics import METRICS


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


def paired_speedup(pairs: Iterable[Pair]) -> PairedSpeedup:
    """The speedup of the module docstring over ``pairs``; pairs with a non-positive or non-finite
    side are left out, several measurements of one (prompt, repetition) are averaged on the log scale."""
    logs: dict[tuple[str, int], list[float]] = {}
    for p in pairs:
        if min(p.spec_tps, p.base_tps) > 0 and math.isfinite(p.spec_tps) and math.isfinite(p.base_tps):
            logs.setdefault((p.prompt, p.repetition), []).append(math.log(p.spec_tps / p.base_tps))
    if not logs:
        return PairedSpeedup(None, None, None, 0, 0, None, None)
    d = {key: fmean(v) for key, v in logs.items()}
    by_prompt: dict[str, list[float]] = {}
    by_rep: dict[int, list[tuple[str, float]]] = {}
    for (prompt, rep), x in d.items():
        by_prompt.setdefault(prompt, []).append(x)
        by_rep.setdefault(rep, []).append((prompt, x))
    m = {prompt: fmean(xs) for prompt, xs in by_prompt.items()}
    s = fmean(m.values())
    per_rep = [s + fmean(x - m[prompt] for prompt, x in by_rep[rep]) for rep in sorted(by_rep)]
    low = high = None
    centre = s
    if len(per_rep) > 1:
        iv = interval(per_rep)  # fewer than MIN_PAIRS repetitions: the t interval, as `specbench ab`
        centre = iv.estimate
        if iv.low is not None and iv.high is not None:  # always, from two repetitions on
            low, high = math.exp(iv.low), math.exp(iv.high)
    return PairedSpeedup(
        value=math.exp(centre), ci_low=low, ci_high=high, repetitions=len(per_rep), prompts=len(m),
        prompt_low=math.exp(min(m.values())), prompt_high=math.exp(max(m.values())),
    )  # fmt: skip


@dataclass(frozen=True)
class Value:
    """One measured value of a cell: which prompt and repetition it came from."""

    prompt: str
    repetition: int
    value: float


@dataclass(frozen=True)
class Figure:
    value: float | None  # None: nothing measured
    low: float | None  # the 95% interval; None with a single repetition (or sample)
    high: float | None
    n: int  # speedup: repetitions with a pair; otherwise samples


def speedup_text(value: float | None, low: float | None, high: float | None, n: int) -> str:
    """The one spelling of a speedup and its interval (report, compare, history, publish)."""
    if value is None:
        return "-"
    if low is None or high is None:  # one repetition: no estimate of its noise
        return f"{value:.2f}x n={n}"
    return f"{value:.2f}x [{low:.2f}, {high:.2f}]"


def number(value: float | None, spec: str = ".1f") -> str:
    """A figure in a table (report, site): ``-`` where nothing was measured."""
    return "-" if value is None else format(value, spec)


def figure(metric: str, values: Iterable[Value]) -> Figure:
    """The figure of ``metric`` over one cell's values (see the module docstring)."""
    vals = list(values)
    if not vals:
        return Figure(None, None, None, 0)
    if metric in METRICS and METRICS[metric].scale == "ratio":  # rates and ratios: the speedup's average
        s = paired_speedup(Pair(v.prompt, v.repetition, v.value, 1.0) for v in vals)
        return Figure(s.value, s.ci_low, s.ci_high, s.repetitions if METRICS[metric].paired else len(vals))
    m = summarize([v.value for v in vals])
    return Figure(m.mean, m.ci_low, m.ci_high, m.n)


# Which cell may be called best: the one rule for report's ★, tune's choice, history and the site.
MAX_SPREAD = 2.0  # an interval whose high bound is over twice its low one does not tell 1.4x from 2.8x


class Standing(StrEnum):
    """What a speedup figure can be called: only a decided, real cell is ever "the best"."""

    DECIDED = "decided"  # measured, with a 95% interval within a factor MAX_SPREAD
    # measured, but one repetition (no interval) or an interval too wide to mean a number
    UNDECIDED = "undecided"
    SYNTHETIC = "synthetic"  # drafts accepted at random (synth_len): a simulation, not an achieved speedup
    NOTHING = "nothing"  # no value


def standing(value: float | None, low: float | None, high: float | None, synthetic: bool = False) -> Standing:
    """A speedup's standing (see ``Standing``)."""
    if value is None or not math.isfinite(value):
        return Standing.NOTHING
    if synthetic:
        return Standing.SYNTHETIC
    if low is None or high is None or not low > 0 or not math.isfinite(high) or high / low > MAX_SPREAD:
        return Standing.UNDECIDED
    return Standing.DECIDED


def slower(low: float | None, high: float | None) -> bool:
    """A decided figure whose whole 95% interval lies below 1.0x: the fastest of a slowdown. It is
    still the best of its cells, but never starred or headlined as a setting to use."""
    return low is not None and high is not None and high < 1.0


SLOWER = "slower"  # what the site's headline says instead of a figure when even the best is ``slower``


def slower_text(what: str, figure: str) -> str:
    """What report and site say instead of a ★ / headline when even the best cell is ``slower``."""
    return (
        f"No setting of {what} beats its baseline: the fastest ({figure}) is slower, "
        "its whole 95% interval below 1.0x."
    )


def standing_text(s: Standing) -> str:
    """How a best that is not decided is named where a figure would stand (site, tune, history)."""
    return {
        Standing.UNDECIDED: f"undecided (one repetition, or a 95% interval over a factor {MAX_SPREAD:g})",
        Standing.SYNTHETIC: "synthetic (drafts accepted at random: a simulation, not a measured speedup)",
        Standing.NOTHING: "nothing measured",
    }.get(s, "")


T = TypeVar("T")


@dataclass(frozen=True)
class Best(Generic[T]):
    """``pick_best``'s answer: the cell (None when nothing was measured) and what it may be called."""

    item: T | None
    standing: Standing

    @property
    def decided(self) -> bool:
        return self.standing == Standing.DECIDED


def pick_best(
    items: Iterable[T],
    speedup: Callable[[T], tuple[float | None, float | None, float | None]],
    synthetic: Callable[[T], bool] = lambda _: False,
) -> Best[T]:
    """The highest speedup among the decided real cells; failing those, among the undecided ones,
    then the synthetic ones, with the standing that says which (``speedup``: value, low, high)."""
    found: dict[Standing, list[tuple[float, T]]] = {}
    for item in items:
        value, low, high = speedup(item)
        s = standing(value, low, high, synthetic(item))
        if value is not None and s != Standing.NOTHING:  # NOTHING: no value
            found.setdefault(s, []).append((value, item))
    for s in (Standing.DECIDED, Standing.UNDECIDED, Standing.SYNTHETIC):
        if s in found:
            return Best(max(found[s], key=lambda t: t[0])[1], s)
    return Best(None, Standing.NOTHING)

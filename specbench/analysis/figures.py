"""A cell's figure (its value and 95% interval) from its per-prompt, per-repetition values: the one
definition ``report``, ``compare``, ``history``, ``publish`` and ``tune`` show.

Before this module the report, history and the results site each summarised a cell their own way
(paired geometric speedup; mean and sd of per-repetition means; geometric means with a log-scale t
interval), and one cell read 3.87x, 110x and 46x. Now every reader hands the same values to
``figure``: speedups are the samples' ratios to the baseline ``results.bracket.paired_baseline``
pairs them with, and their figure is ``paired_speedup``'s (prompts weighted equally, the interval
from repetitions); a t/s or an acceptance is the mean over the samples with its t interval, as the
report's columns have always been.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from specbench.analysis.speedup import Pair, paired_speedup
from specbench.base.stats import summarize
from specbench.results.metrics import METRICS


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

    def speedup_text(self) -> str:
        """``1.23x [1.10, 1.37]`` or ``1.23x n=1``: a speedup as every command prints it."""
        return speedup_text(self.value, self.low, self.high, self.n)


def speedup_text(value: float | None, low: float | None, high: float | None, n: int) -> str:
    """The one spelling of a speedup and its interval (report, compare, history, publish)."""
    if value is None:
        return "-"
    if low is None or high is None:  # one repetition: no estimate of its noise
        return f"{value:.2f}x n={n}"
    return f"{value:.2f}x [{low:.2f}, {high:.2f}]"


NOTHING = Figure(None, None, None, 0)


def figure(metric: str, values: Iterable[Value]) -> Figure:
    """The figure of ``metric`` over one cell's values (see the module docstring)."""
    vals = list(values)
    if not vals:
        return NOTHING
    if metric in METRICS and METRICS[metric].paired:  # a speedup: each value a ratio to its pair
        s = paired_speedup(Pair(v.prompt, v.repetition, v.value, 1.0) for v in vals)
        return Figure(s.value, s.ci_low, s.ci_high, s.repetitions)
    m = summarize([v.value for v in vals])
    return Figure(m.mean, m.ci_low, m.ci_high, m.n)

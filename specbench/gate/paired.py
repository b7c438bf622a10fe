"""The paired statistic of ``specbench ab``: did head get slower than base, measured side by side?

Pure functions, no I/O: one value per (prompt, repetition) and build, the two builds of a pair run
back to back. Throughput is judged on each pair's log ratio head/base, acceptance on the difference
in points. The estimate is Hodges-Lehmann with the Wilcoxon signed-rank interval (``base.stats``):
an outlier moves it no more than a median, and the same samples always give the same decision.
Under 6 pairs the t interval decides (an outlier only widens it), and one pair the threshold alone;
the rule is ``gate.decision.classify`` (docs/ab-bisect.md: why this statistic).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from pydantic import BaseModel, computed_field

from specbench.base.stats import CONFIDENCE, interval, log_ratios
from specbench.gate.decision import ACCEPTANCE_POINTS, THRESHOLD, Status, classify, signed_pct


def ab_word(status: Status) -> str:
    """The name ``ab`` prints for a decision: the gate's ``too_noisy`` reads ``undecided`` there."""
    return "undecided" if status == Status.TOO_NOISY else str(status)


class PairedDecision(BaseModel):
    """What the paired gate says about one cell and metric."""

    metric: str
    unit: str  # "ratio" (t/s, speedup: head/base) or "points" (acceptance: head - base)
    n_pairs: int
    ratio: float | None = None  # HL estimate as a ratio (or the change in points); None with no pairs
    ci_low: float | None = None  # None: no interval (one pair, or none)
    ci_high: float | None = None
    p_value: float | None = None
    detectable: float | None = None  # smallest change this run could call significant (relative, or points)
    status: Status
    reason: str

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented form; mypy cannot type it
    @property
    def decision(self) -> str:
        """fail, pass, improved or undecided."""
        return ab_word(self.status)


class _Unit(NamedTuple):
    """How one unit reports a change: the two decide functions differ only in this."""

    name: str  # "ratio" or "points"
    scale: Callable[[float], float]  # from the differences' scale to the reported value
    change: Callable[[float], float]  # a reported value as a change (0: none)
    show: Callable[[float], str]  # a reported value as text
    bound: Callable[[float], str]  # an interval bound as text
    words: tuple[str, str]  # (a worse change, better)
    limit: str  # the threshold as text


def _judge(d: list[float], unit: _Unit, limit: float, metric: str, confidence: float) -> PairedDecision:
    """The rule of this module over pair differences, reported in ``unit``."""
    if not d:
        return PairedDecision(
            metric=metric, unit=unit.name, n_pairs=0, status=Status.TOO_NOISY,
            reason="no pair with a valid value on both builds",
        )  # fmt: skip
    iv = interval(d, confidence)  # too few pairs for a signed-rank interval: the t interval
    how = "" if iv.signed_rank else " (t interval: too few pairs for a signed-rank one)"
    est = unit.scale(iv.estimate)
    if iv.low is None or iv.high is None:  # one pair: the threshold alone can fail it
        outcome = classify(unit.change(est), None, None, limit)
        why = (
            f"{unit.show(est)} from 1 pair, beyond -{unit.limit}: no noise estimate, the threshold decides"
            if outcome == Status.FAIL
            else f"{unit.show(est)} from 1 pair: noise unknown, a {unit.words[0]} of {unit.limit} cannot be "
            "excluded; more repetitions"
        )
        return PairedDecision(
            metric=metric, unit=unit.name, n_pairs=iv.n, ratio=est, status=outcome, reason=why
        )
    lo, hi = unit.scale(iv.low), unit.scale(iv.high)
    detectable = unit.change(unit.scale((iv.high - iv.low) / 2.0))
    ci = f"[{unit.bound(lo)}, {unit.bound(hi)}]{how}"
    worse, better = unit.words
    outcome = classify(unit.change(est), unit.change(lo), unit.change(hi), limit)
    why = {
        Status.FAIL: f"{unit.show(est)} {ci}: a significant {worse} beyond -{unit.limit}",
        Status.IMPROVED: f"{unit.show(est)} {ci}: significantly {better}",
        Status.PASS: f"{unit.show(est)} {ci}: excludes a {worse} of {unit.limit}",
    }.get(
        outcome,
        f"{unit.show(est)} {ci}: cannot exclude a {worse} of {unit.limit} nor show one; "
        f"this run detects changes of ±{unit.show(unit.scale((iv.high - iv.low) / 2.0)).lstrip('+')}: "
        "more repetitions",
    )
    return PairedDecision(
        metric=metric, unit=unit.name, n_pairs=iv.n, ratio=est, ci_low=lo, ci_high=hi, p_value=iv.p_value,
        detectable=detectable, status=outcome, reason=why,
    )  # fmt: skip


def decide_ratio(
    base: Sequence[float],
    head: Sequence[float],
    threshold: float = THRESHOLD,
    metric: str = "tps",
    confidence: float = CONFIDENCE,
) -> PairedDecision:
    """Higher is better. Judge head/base over paired values by the rules of this module."""
    unit = _Unit(
        name="ratio", scale=math.exp, change=lambda r: r - 1.0, show=lambda r: signed_pct(r - 1.0),
        bound=lambda r: signed_pct(r - 1.0), words=("slowdown", "faster"), limit=f"{threshold * 100:g}%",
    )  # fmt: skip
    return _judge(log_ratios(base, head), unit, threshold, metric, confidence)


def decide_points(
    base: Sequence[float],
    head: Sequence[float],
    points: float = ACCEPTANCE_POINTS,
    metric: str = "acceptance",
    confidence: float = CONFIDENCE,
) -> PairedDecision:
    """Acceptance (fractions 0..1) judged on head - base in percentage points, same rules."""
    d = [(h - b) * 100.0 for b, h in zip(base, head, strict=True) if math.isfinite(b) and math.isfinite(h)]
    unit = _Unit(
        name="points", scale=lambda x: x, change=lambda x: x, show=lambda x: f"{x:+.1f} points",
        bound=lambda x: f"{x:+.1f}", words=("drop", "higher"), limit=f"{points:g}",
    )  # fmt: skip
    return _judge(d, unit, points, metric, confidence)

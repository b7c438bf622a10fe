"""The per-cell decision of the regression gate: is the current run slower than the baseline?

Pure statistics over per-repetition values, no I/O: a one-sided Welch interval of the change
(relative to the baseline mean; acceptance in points) fed to the rule of ``gate.decision``; an
undecided cell is printed with the smallest change the data could detect.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Sequence

from pydantic import BaseModel

from specbench.base.errors import InputError
from specbench.base.stats import summarize, variance, welch
from specbench.gate.decision import ACCEPTANCE_POINTS, ALPHA, THRESHOLD, Status, classify, signed_pct

__all__ = ["Decision", "Status", "decide_acceptance", "decide_throughput", "parse_threshold"]

NOISY_CV = 0.10  # coefficient of variation above which a side is called noisy (a pass becomes warn)


class Decision(BaseModel):
    """What the gate says about one cell, with the numbers it based that on."""

    status: Status
    reason: str
    n_base: int
    n_cur: int
    mean_base: float
    mean_cur: float
    sd_base: float | None
    sd_cur: float | None
    cv_base: float | None
    cv_cur: float | None
    ratio: float | None  # mean_cur / mean_base (None when the baseline mean is 0)
    change: float  # relative change (throughput) or percentage points (acceptance)
    p_value: float | None  # one-sided Welch p in the direction of the change; None: < 2 values a side
    # One-sided (1 - alpha) confidence bounds of ``change`` (None: < 2 values a side, noise unknown)
    low: float | None = None
    high: float | None = None
    mde: float | None = None  # the smallest drop this noise could call significant (t x standard error)


def parse_threshold(text: str | float) -> float:
    """``"5%"`` or ``"0.05"`` -> 0.05. A bare number >= 1 is refused (ambiguous: 5 or 500%?)."""
    raw = str(text).strip()
    try:
        value = float(raw.removesuffix("%").strip()) / (100.0 if raw.endswith("%") else 1.0)
    except ValueError:
        raise InputError(
            f"--threshold {raw!r}: not a number; write a percentage (5%) or a fraction (0.05)"
        ) from None
    if value >= 1 and not raw.endswith("%"):
        raise InputError(f"--threshold {raw}: ambiguous; write a percentage (5%) or a fraction (0.05)")
    if not (0 <= value < 1) or math.isnan(value):
        raise InputError(f"--threshold {raw}: must be between 0% and 100%")
    return value


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_budget(text: str) -> float:
    """``--budget``: ``"600"``, ``"600s"``, ``"10m"`` or ``"1.5h"`` -> seconds (more than 0)."""
    raw = str(text).strip()
    number, scale = raw, 1.0
    if raw[-1:].lower() in _UNITS:
        number, scale = raw[:-1].strip(), _UNITS[raw[-1].lower()]
    try:
        value = float(number) * scale
    except ValueError:
        raise InputError(
            f"--budget {raw!r}: not a number of seconds; write e.g. 600, 600s, 10m or 1h"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(
            f"--budget {raw}: must be more than 0 seconds; write e.g. 600, 10m or 1h, or leave it out "
            "(rounds until decided or max_repetitions)"
        )
    return value


def cv(values: Sequence[float]) -> float | None:
    """Coefficient of variation sd/mean; None with fewer than 2 values or a zero mean."""
    s = summarize(values)
    return None if s.sd is None or not s.mean else s.sd / abs(s.mean)


def welch_one_sided(a: Sequence[float], b: Sequence[float], alternative: str = "greater") -> float:
    """p-value of Welch's t-test that mean(a) > mean(b) (``greater``) or < (``less``); with no
    variance at all the means decide exactly (p 0 or 1)."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t-test needs at least 2 values per side")
    if variance(a) == 0 and variance(b) == 0:  # no spread at all (scipy would warn and return nan)
        ma, mb = statistics.fmean(a), statistics.fmean(b)
        return 0.0 if (ma > mb if alternative == "greater" else ma < mb) else 1.0
    with warnings.catch_warnings():  # one constant side is fine for Welch; scipy warns about it anyway
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_ind(list(a), list(b), equal_var=False, alternative=alternative).pvalue)


def geometric_mean(ratios: Sequence[float]) -> float | None:
    """Summary of many per-cell ratios; None when there are none (or one is not positive)."""
    from scipy import stats

    good = [r for r in ratios if r is not None and r > 0 and math.isfinite(r)]
    return float(stats.gmean(good)) if good and len(good) == len(ratios) else None


def _describe(base: Sequence[float], cur: Sequence[float]) -> dict:
    b, c = summarize(base), summarize(cur)
    ratio = c.mean / b.mean if b.mean and c.mean is not None else None
    return dict(
        n_base=b.n, n_cur=c.n, mean_base=b.mean, mean_cur=c.mean, sd_base=b.sd, sd_cur=c.sd,
        cv_base=cv(base), cv_cur=cv(cur), ratio=ratio,
    )  # fmt: skip


def welch_interval(
    base: Sequence[float], cur: Sequence[float], alpha: float
) -> tuple[float, float, float] | None:
    """mean(cur) - mean(base) with its one-sided (1 - alpha) Welch bounds and the t x standard
    error between them; None with fewer than 2 values on a side (the noise is unknown)."""
    found = welch(base, cur, 1 - 2 * alpha)  # two-sided 1 - 2a = one-sided 1 - a
    if found is None:
        return None
    diff, reach = found
    return diff - reach, diff + reach, reach


def _p_value(base: Sequence[float], cur: Sequence[float], change: float) -> float | None:
    if len(base) < 2 or len(cur) < 2 or change == 0:
        return None
    return welch_one_sided(base, cur, "greater" if change < 0 else "less")


def _reason(status: Status, change: str, low: str | None, mde: str | None, thr: str, p: float | None) -> str:
    """Why, in one line: the change, what the data can exclude, and the smallest change it could see."""
    pv = f"p={p:.3g}" if p is not None else None
    if low is None:  # one value on a side: no noise estimate
        if status == Status.FAIL:
            return f"{change}, beyond -{thr} (one value on a side: no noise estimate; the threshold decides)"
        return (
            f"too noisy to decide: {change} from one repetition on a side, noise unknown, so a -{thr} "
            "regression cannot be excluded; 2 or more repetitions (repetitions: auto)"
        )
    if status == Status.FAIL:
        return f"{change}, significant ({pv}) and beyond -{thr}"
    if status == Status.IMPROVED:
        return f"{change}, significant ({pv}) and beyond +{thr}"
    if status == Status.PASS:
        return f"{change}, excludes a drop beyond -{thr} (at worst {low})"
    return f"too noisy to decide: {change}, could be {low}: a -{thr} regression not excluded (mde {mde})"


def decide_throughput(
    base: Sequence[float], cur: Sequence[float], threshold: float = THRESHOLD, alpha: float = ALPHA
) -> Decision:
    """Higher is better; the change is relative to the baseline mean, judged on its one-sided Welch
    bounds; a pass or improvement with a noisy side (CV > 10%) is downgraded to warn."""
    d = _describe(base, cur)
    mb = d["mean_base"]
    change = (d["ratio"] - 1.0) if d["ratio"] is not None else 0.0
    interval = welch_interval(base, cur, alpha) if mb else None
    low, high, mde = (None, None, None) if interval is None else (x / abs(mb) for x in interval)
    p = _p_value(base, cur, change)
    status = classify(change, low, high, threshold)
    mde_text = None if mde is None else f"{mde * 100:.1f}%"
    # the linear bound can pass -100%; t/s cannot
    low_text = None if low is None else signed_pct(max(low, -1.0))
    reason = _reason(status, signed_pct(change), low_text, mde_text, f"{threshold * 100:g}%", p)
    status, reason = _noise(status, reason, d)
    return Decision(status=status, reason=reason, change=change, p_value=p, low=low, high=high, mde=mde, **d)


def decide_acceptance(
    base: Sequence[float],
    cur: Sequence[float],
    temperature: float = 0.0,
    alpha: float = ALPHA,
    points: float = ACCEPTANCE_POINTS,
) -> Decision:
    """Acceptance (fraction 0..1), compared in absolute percentage points with ``points`` as the
    threshold. At temperature 0 the draws are deterministic, so the difference is exact: more
    than ``points`` down fails outright. Above 0 the same rule as t/s, on Welch bounds in points."""
    d = _describe(base, cur)
    change = (d["mean_cur"] - d["mean_base"]) * 100.0
    shown = f"{change:+.1f} points"
    if temperature > 0:
        interval = welch_interval(base, cur, alpha)
        low, high, mde = (None, None, None) if interval is None else (x * 100.0 for x in interval)
        p = _p_value(base, cur, change)
        status = classify(change, low, high, points)
        low_text = None if low is None else f"{low:+.1f} points"
        mde_text = None if mde is None else f"{mde:.1f} points"
        reason = _reason(status, shown, low_text, mde_text, f"{points:g} points", p)
        status, reason = _noise(status, reason, d)
        return Decision(
            status=status, reason=reason, change=change, p_value=p, low=low, high=high, mde=mde, **d
        )
    status = classify(change, change, change, points)  # exact: its bounds are the change itself
    where = {Status.FAIL: f"beyond -{points:g}", Status.IMPROVED: f"beyond +{points:g}"}
    reason = f"{shown}, {where.get(status, f'within ±{points:g}')} (temperature 0: exact)"
    return Decision(
        status=status, reason=reason, change=change, p_value=None, low=change, high=change, mde=0.0, **d
    )


def _noise(status: Status, reason: str, d: dict) -> tuple[Status, str]:
    """A noisy side is named; it turns a pass or an improvement into a warn (never hides a fail)."""
    noisy = [
        f"{side} CV {c:.0%}"
        for side, c in (("baseline", d["cv_base"]), ("current", d["cv_cur"]))
        if c is not None and c > NOISY_CV
    ]
    if not noisy:
        return status, reason
    reason = f"{reason}; noisy: {', '.join(noisy)}"
    if status in (Status.PASS, Status.IMPROVED):
        status = Status.WARN
    return status, reason

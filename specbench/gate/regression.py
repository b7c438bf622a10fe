"""The per-cell decision of the regression gate: is the current run slower than the baseline?

Pure statistics over per-repetition values, no I/O. Throughput (t/s, speedup) is judged by a
relative threshold plus a one-sided Welch t-test, so CI fails on real slowdowns and stays green on
noise; acceptance is a fraction and is judged in absolute percentage points.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel

from specbench.analysis.stats import summarize
from specbench.errors import SpecbenchError
from specbench.results.precision import change_half_width

MIN_REPS_FOR_TEST = 3  # below this on either side the threshold alone decides
NOISY_CV = 0.10  # coefficient of variation above which a side is called noisy
ACCEPTANCE_POINTS = 2.0  # acceptance change (percentage points) that counts


class Status(StrEnum):
    FAIL = "fail"
    WARN = "warn"
    TOO_NOISY = "too_noisy"  # the CI of the change is wider than the threshold: cannot decide
    IMPROVED = "improved"
    PASS = "pass"


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
    p_value: float | None  # one-sided Welch p in the direction of the change; None: too few reps
    noise: float | None = None  # 95% CI half-width of the relative change (Welch); None: < 2 a side


def parse_threshold(text: str | float) -> float:
    """``"5%"`` or ``"0.05"`` -> 0.05. A bare number >= 1 is refused (ambiguous: 5 or 500%?)."""
    raw = str(text).strip()
    try:
        if raw.endswith("%"):
            value = float(raw[:-1].strip()) / 100.0
        else:
            value = float(raw)
            if value >= 1:
                raise SpecbenchError(
                    f"--threshold {raw}: ambiguous; write a percentage (5%) or a fraction (0.05)", exit_code=2
                )
    except ValueError:
        raise SpecbenchError(
            f"--threshold {raw!r}: not a number; write a percentage (5%) or a fraction (0.05)", exit_code=2
        ) from None
    if not (0 <= value < 1) or math.isnan(value):
        raise SpecbenchError(f"--threshold {raw}: must be between 0% and 100%", exit_code=2)
    return value


def mean_sd(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (n - 1; None for a single value), from the report's stats."""
    s = summarize(values)
    return s.mean, s.sd


def cv(values: Sequence[float]) -> float | None:
    """Coefficient of variation sd/mean; None with fewer than 2 values or a zero mean."""
    mean, sd = mean_sd(values)
    if sd is None or mean == 0:
        return None
    return sd / abs(mean)


def welch_one_sided(a: Sequence[float], b: Sequence[float], alternative: str = "greater") -> float:
    """p-value of Welch's t-test that mean(a) > mean(b) (``greater``) or < (``less``).

    When both samples have zero variance the means decide exactly (p 0 when the difference lies
    in the tested direction, else 1).
    """
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t-test needs at least 2 values per side")
    (ma, sa), (mb, sb) = mean_sd(a), mean_sd(b)
    if sa == 0 and sb == 0:  # no spread at all (scipy would warn and return nan)
        in_direction = ma > mb if alternative == "greater" else ma < mb
        return 0.0 if in_direction else 1.0
    with warnings.catch_warnings():  # one constant side is fine for Welch; scipy warns about it anyway
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_ind(list(a), list(b), equal_var=False, alternative=alternative).pvalue)


def geometric_mean(ratios: Sequence[float]) -> float | None:
    """Summary of many per-cell ratios; None when there are none (or one is not positive)."""
    from scipy import stats

    good = [r for r in ratios if r is not None and r > 0 and math.isfinite(r)]
    if not good or len(good) != len(ratios):
        return None
    return float(stats.gmean(good))


def _describe(base: Sequence[float], cur: Sequence[float]) -> dict:
    mb, sb = mean_sd(base)
    mc, sc = mean_sd(cur)
    return dict(
        n_base=len(base), n_cur=len(cur), mean_base=mb, mean_cur=mc, sd_base=sb, sd_cur=sc,
        cv_base=cv(base), cv_cur=cv(cur), ratio=(mc / mb) if mb else None,
    )  # fmt: skip


def decide_throughput(
    base: Sequence[float], cur: Sequence[float], threshold: float = 0.05, alpha: float = 0.05
) -> Decision:
    """Higher is better. fail: dropped > threshold and one-sided Welch p < alpha (or too few reps
    for a test); warn: dropped > threshold without significance, or either side noisy (CV > 10%);
    improved: rose > threshold (significantly, or too few reps); else pass. too_noisy overrides all
    but a significant fail/improvement when the 95% CI of the relative change is wider than the
    threshold: such a cell can neither show a regression of that size nor rule one out."""
    if not base or not cur:
        raise ValueError("both sides need at least one value")
    d = _describe(base, cur)
    change = (d["ratio"] - 1.0) if d["ratio"] is not None else 0.0
    testable = len(base) >= MIN_REPS_FOR_TEST and len(cur) >= MIN_REPS_FOR_TEST
    pct, thr = f"{change * 100:+.1f}%", f"{threshold * 100:g}%"
    p = None
    if change < 0 and testable:
        p = welch_one_sided(base, cur, "greater")
    elif change > 0 and testable:
        p = welch_one_sided(base, cur, "less")

    if change < -threshold:
        if not testable:
            status, reason = Status.FAIL, f"{pct}, beyond -{thr} (too few repetitions for a test)"
        elif p < alpha:
            status, reason = Status.FAIL, f"{pct}, significant (p={p:.3g} < {alpha:g})"
        else:
            status, reason = Status.WARN, f"{pct}, beyond -{thr} but not significant (p={p:.3g})"
    elif change > threshold and (not testable or p < alpha):
        status, reason = Status.IMPROVED, f"{pct}" + (f", significant (p={p:.3g})" if testable else "")
    else:
        within = abs(change) <= threshold
        status, reason = (
            Status.PASS,
            f"{pct}, within ±{thr}" if within else f"{pct}, not significant (p={p:.3g})",
        )
    status, reason = _noise(status, reason, d)
    noise = change_half_width(base, cur)
    decided = p is not None and p < alpha and status in (Status.FAIL, Status.IMPROVED)
    if noise is not None and noise > threshold and not decided:
        status = Status.TOO_NOISY
        reason = (
            f"too noisy to decide: {pct} ±{noise * 100:.1f}% (95% CI) is wider than the {thr} threshold; "
            "more repetitions (repetitions=auto) or a quieter machine"
        )
    return Decision(status=status, reason=reason, change=change, p_value=p, noise=noise, **d)


def decide_acceptance(
    base: Sequence[float],
    cur: Sequence[float],
    temperature: float = 0.0,
    alpha: float = 0.05,
    points: float = ACCEPTANCE_POINTS,
) -> Decision:
    """Acceptance (fraction 0..1), compared in absolute percentage points. At temperature 0 the
    draws are deterministic: a drop of more than ``points`` fails outright. Above 0 a drop must
    also be significant (Welch) to fail; otherwise it warns."""
    if not base or not cur:
        raise ValueError("both sides need at least one value")
    d = _describe(base, cur)
    change = (d["mean_cur"] - d["mean_base"]) * 100.0
    testable = temperature > 0 and len(base) >= MIN_REPS_FOR_TEST and len(cur) >= MIN_REPS_FOR_TEST
    p = None
    if testable and change != 0:
        p = welch_one_sided(base, cur, "greater" if change < 0 else "less")
    pts = f"{change:+.1f} points"
    if change < -points:
        if p is None or p < alpha:
            sig = f" (p={p:.3g})" if p is not None else ""
            status, reason = Status.FAIL, f"{pts}, beyond -{points:g}{sig}"
        else:
            status, reason = Status.WARN, f"{pts}, beyond -{points:g} but not significant (p={p:.3g})"
    elif change > points and (p is None or p < alpha):
        status, reason = Status.IMPROVED, pts
    else:
        status, reason = Status.PASS, f"{pts}, within ±{points:g}" if abs(change) <= points else pts
    if temperature > 0:
        status, reason = _noise(status, reason, d)
    return Decision(status=status, reason=reason, change=change, p_value=p, **d)


def _noise(status: Status, reason: str, d: dict) -> tuple[Status, str]:
    """A noisy side cannot be trusted either way: downgrade pass/improved to warn."""
    noisy = [
        f"{side} CV {c:.0%}" for side, c in (("baseline", d["cv_base"]), ("current", d["cv_cur"]))
        if c is not None and c > NOISY_CV
    ]  # fmt: skip
    if not noisy:
        return status, reason
    reason = f"{reason}; noisy: {', '.join(noisy)}"
    if status in (Status.PASS, Status.IMPROVED):
        status = Status.WARN
    return status, reason

"""The gate's vocabulary for every command that gates: a cell's decisions, the one rule, the exit codes.

The rule: a change significant and beyond the threshold fails, however noisy the data; a pass needs
the data to exclude a regression of the threshold's size; anything else is *too noisy to decide*,
its own exit code, never a silent pass. More data can turn "too noisy" into pass or fail, but never
a fail into a pass.
"""

from __future__ import annotations

from enum import StrEnum

from specbench.base.errors import ExitCode

ACCEPTANCE_POINTS = 2.0  # the acceptance change (percentage points) that counts, whatever --threshold
THRESHOLD = 0.05  # the relative change that counts by default (--threshold 5%)
ALPHA = 0.05  # the default one-sided significance level (--alpha)
OUTPUT = "output"  # the greedy output check's metric: not a number, a table of its own


class Status(StrEnum):
    """One cell's decision."""

    FAIL = "fail"  # significant and beyond the threshold (or beyond it with no noise estimate)
    WARN = "warn"  # passes the rule, but something is off (a noisy side); fails only with --strict
    TOO_NOISY = "too_noisy"  # neither: the data cannot exclude a regression of the threshold's size
    IMPROVED = "improved"  # significant and beyond the threshold, upwards
    PASS = "pass"  # the data excludes a regression of the threshold's size
    UNDECIDED = "too_noisy"  # the same outcome under the name `ab` uses (an alias, not a new value)


# How a gate lists its cells: the most severe first (Status values, and compare's one-side-only cells)
SEVERITY = ("fail", "warn", "too_noisy", "only_baseline", "only_current", "improved", "pass")
# The decisions that want more pairs (``ab``'s rounds); bisect's run against bad adds PASS.
STILL_OPEN = frozenset({Status.TOO_NOISY})


class Verdict(StrEnum):
    """What a whole gate says; each has its exit code (``ExitCode``, specbench.base.errors)."""

    PASS = "pass"
    FAIL = "fail"
    UNDECIDED = "undecided"
    NOTHING = "nothing_to_compare"

    @staticmethod
    def of(failed: int, undecided: int, nothing: bool = False, allow_noisy: bool = False) -> Verdict:
        """The gate's verdict from what its cells said: a failure wins over an empty side, which wins
        over undecided cells (``allow_noisy`` passes those)."""
        if failed:
            return Verdict.FAIL
        if nothing:
            return Verdict.NOTHING
        if undecided and not allow_noisy:
            return Verdict.UNDECIDED
        return Verdict.PASS


EXIT_CODES = {
    Verdict.PASS: ExitCode.OK,
    Verdict.FAIL: ExitCode.FAILED,
    Verdict.UNDECIDED: ExitCode.UNDECIDED,
    Verdict.NOTHING: ExitCode.NOTHING,
}
VERDICT_WORDS = {  # how each verdict opens the last line of every gate
    Verdict.PASS: "PASS",
    Verdict.FAIL: "FAIL",
    Verdict.UNDECIDED: "TOO NOISY",
    Verdict.NOTHING: "NOTHING TO COMPARE",
}


def classify(change: float, low: float | None, high: float | None, threshold: float) -> Status:
    """The rule on a change (relative, or in points) and its one-sided (1 - alpha) bounds. Without
    bounds (noise unknown) only the threshold can decide, and only a fail. A change exactly at the
    threshold is not beyond it; ``WARN`` is a caller's downgrade of a pass, never returned here."""
    if low is None or high is None:
        return Status.FAIL if change < -threshold else Status.TOO_NOISY
    if change < -threshold and high < 0:
        return Status.FAIL
    if change > threshold and low > 0:
        return Status.IMPROVED
    if low >= -threshold:
        return Status.PASS
    return Status.TOO_NOISY


def signed_pct(change: float) -> str:
    """A relative change as every gate prints it: ``-3.1%``."""
    return f"{change * 100:+.1f}%"

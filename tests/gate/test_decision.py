"""The gate's rule and exit codes, independent of how a change and its bounds were estimated."""

import random

import pytest

from specbench.gate.decision import EXIT_CODES, ExitCode, Status, Verdict, classify

THR = 0.05


@pytest.mark.parametrize(
    "change,low,high,status",
    [
        (-0.10, -0.15, -0.05, Status.FAIL),  # significant and beyond: fails
        (-0.10, -0.60, -0.01, Status.FAIL),  # ...whatever the noise
        (-0.10, -0.30, 0.10, Status.TOO_NOISY),  # beyond but not significant: cannot exclude it
        (-0.02, -0.03, -0.01, Status.PASS),  # a significant drop within the threshold passes
        (-0.02, -0.08, 0.04, Status.TOO_NOISY),  # could be a 5% regression
        (0.00, -0.05, 0.05, Status.PASS),  # exactly excludes a drop beyond 5%
        (0.10, 0.02, 0.18, Status.IMPROVED),
        (0.10, -0.04, 0.24, Status.PASS),  # rose, not significantly, but a 5% drop is excluded
        (0.10, -0.20, 0.40, Status.TOO_NOISY),
        (-0.05, -0.05, -0.05, Status.PASS),  # at the threshold is not beyond it
    ],
)
def test_classify(change, low, high, status):
    assert classify(change, low, high, THR) == status


def test_unknown_noise_fails_beyond_the_threshold_and_decides_nothing_else():
    assert classify(-0.10, None, None, THR) == Status.FAIL
    assert classify(-0.01, None, None, THR) == Status.TOO_NOISY
    assert classify(0.50, None, None, THR) == Status.TOO_NOISY


def test_beyond_the_threshold_never_passes_whatever_the_bounds():
    rng = random.Random(24)
    for _ in range(5000):
        change = -THR - rng.uniform(1e-9, 0.9)
        low = change - rng.uniform(0, 1)
        high = change + rng.uniform(0, 1)
        assert classify(change, low, high, THR) in (Status.FAIL, Status.TOO_NOISY)
        assert classify(change, low, high, THR) == (Status.FAIL if high < 0 else Status.TOO_NOISY)


def test_verdict_precedence_and_exit_codes():
    assert Verdict.of(failed=1, undecided=3, nothing=True) == Verdict.FAIL
    assert Verdict.of(failed=0, undecided=3, nothing=True) == Verdict.NOTHING
    assert Verdict.of(failed=0, undecided=3) == Verdict.UNDECIDED
    assert Verdict.of(failed=0, undecided=3, allow_noisy=True) == Verdict.PASS
    assert Verdict.of(failed=0, undecided=0, nothing=True, allow_noisy=True) == Verdict.NOTHING
    assert Verdict.of(0, 0) == Verdict.PASS
    assert {v: int(c) for v, c in EXIT_CODES.items()} == {
        Verdict.PASS: 0, Verdict.FAIL: 1, Verdict.UNDECIDED: 3, Verdict.NOTHING: 4
    }  # fmt: skip
    assert ExitCode.BAD_INPUT == 2 and Status.UNDECIDED is Status.TOO_NOISY

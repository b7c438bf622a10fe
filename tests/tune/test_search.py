"""Tune's choice (issue 58): the rule every command calls best by (``analysis.figures.pick_best``),
on stand-in candidates."""

from specbench.analysis.figures import Standing
from specbench.tune.candidates import Candidate, Setting
from specbench.tune.search import choose


def _c(g: int, speedup: float, low: float | None, high: float | None, n: int) -> Candidate:
    return Candidate(Setting(g, 0, 0.0, 0, 0), speedup=speedup, speedup_ci_low=low, speedup_ci_high=high, n=n)


def test_a_decided_candidate_wins_over_a_wider_faster_one():
    wide = _c(8, 2.6, 0.01, 3000.0, 6)  # the survivor with the most samples, interval no figure
    decided = _c(4, 1.3, 1.2, 1.4, 4)
    assert choose([wide, decided]) == (decided, Standing.DECIDED)


def test_with_none_decided_the_last_rounds_survivor_is_named_undecided():
    survivor = _c(8, 1.5, 0.5, 4.0, 6)
    lucky = _c(16, 1.9, None, None, 3)  # one round: no interval
    assert choose([survivor, lucky]) == (survivor, Standing.UNDECIDED)

"""``specbench bisect``: which commit made llama.cpp slower, found by paired A/B runs.

The candidates are the first-parent commits after ``good`` up to ``bad``, which is taken as bad
without a step of its own (as in ``git bisect``). Each step runs the midpoint against ``good`` and
the paired gate decides. A midpoint without the regression is slow to *pass* (its interval must fit
inside the threshold), so a step left undecided is run against ``bad`` with the rest of its budget:
significantly faster than ``bad``, a decision as quick as a fail, makes it good. A step undecided
both ways stops the search rather than guess (docs/ab-bisect.md). The state, ``OUT/bisect.json``, is
rewritten after every step; ``--resume`` measures only the steps not yet decided.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ValidationError

from specbench.base.files import write_atomic
from specbench.base.formats import json_text
from specbench.gate.commits import BisectError, Commit, commit_range
from specbench.gate.decision import OUTPUT, STILL_OPEN, Status
from specbench.gate.paired import ab_word
from specbench.results.folder import BISECT


class StepResult(BaseModel):
    status: Status | None = None  # a verdict; None only in a Versus not finished
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    reason: str = ""


class Versus(StepResult):
    """A step's second run: the midpoint against ``bad`` (is it faster, beyond the threshold?)."""

    run_dir: str  # its status: improved (faster than bad), too_noisy, or None (not finished)


NO_PAIRS = "no cell of this metric had pairs on both builds"


class Step(BaseModel):
    """One measured midpoint against good (and, when that is undecided, against bad)."""

    index: int  # into BisectState.commits
    commit: str
    run_dir: str
    status: Status | None = None  # against good; None: not finished (re-measured on --resume)
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    reason: str = ""
    against_bad: Versus | None = None

    @property
    def side(self) -> str | None:
        """ "bad", "good" or "undecided" (None: not finished): what the search reads."""
        if self.status is None:
            return None
        if self.status == Status.FAIL:
            return "bad"
        if self.status in (Status.PASS, Status.IMPROVED, Status.WARN):
            return "good"
        if self.against_bad is None:
            return "undecided"
        # faster than bad: good; None: stopped while measured against bad
        return {Status.IMPROVED: "good", None: None}.get(self.against_bad.status, "undecided")

    @property
    def good_by_bad(self) -> bool:
        """Good only by its run against bad: a smaller slowdown before it is not excluded."""
        return self.side == "good" and self.status == Status.TOO_NOISY

    @property
    def word(self) -> str:
        if self.good_by_bad:
            return "good (faster than --bad)"
        return ab_word(self.status) if self.status is not None else "unfinished"


class BisectState(BaseModel):
    source: str
    good: str  # full shas
    bad: str
    metric: str
    threshold: float
    commits: list[Commit]  # after good, up to and including bad, oldest first
    steps: list[Step] = []
    config: str | None = None  # the resolved config's hash (--set applied): steps measured alike

    def bounds(self) -> tuple[int, int, Step | None]:
        """(last known good index, first known bad index, the undecided step if one stopped it);
        -1 is ``good`` itself, len - 1 is ``bad``."""
        lo, hi = -1, len(self.commits) - 1
        for step in self.steps:
            side = step.side
            if side == "bad":
                hi = min(hi, step.index)
            elif side == "good":
                lo = max(lo, step.index)
            elif side == "undecided":
                return lo, hi, step
        return lo, hi, None

    def next_index(self) -> int | None:
        """The midpoint to measure next, or None when the search is over (found or undecided)."""
        lo, hi, stopped = self.bounds()
        if stopped is not None or hi - lo <= 1:
            return None
        return (lo + hi) // 2

    @property
    def first_bad(self) -> Commit | None:
        lo, hi, stopped = self.bounds()
        return self.commits[hi] if stopped is None and hi - lo <= 1 else None

    @property
    def bad_unmeasured(self) -> bool:
        """The answer is ``bad`` itself and no step measured it (a step good by being faster than bad
        did): it rests on ``--bad`` being slow, as the user said."""
        return (
            self.first_bad is not None
            and self.first_bad.sha == self.bad
            and not any(s.commit == self.bad and s.status is not None for s in self.steps)
            and not any(s.good_by_bad for s in self.steps)
        )


def save_state(out: Path, state: BisectState) -> None:
    write_atomic(out / BISECT, json_text(state, ensure_ascii=False))


def load_state(out: Path) -> BisectState | None:
    path = out / BISECT
    if not path.is_file():
        return None
    try:
        return BisectState.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, ValueError, OSError) as exc:  # ValueError: bad JSON, not UTF-8
        raise BisectError(
            f"{path}: not a bisect state file ({type(exc).__name__}); start afresh in a new --out"
        ) from exc


def start(
    out: Path,
    source: Path,
    good: str,
    bad: str,
    metric: str,
    threshold: float,
    resume: bool,
    config: str | None = None,
) -> BisectState:
    """A new search, or with ``resume`` the one in ``out`` (which must be for the same range, and
    measure as its finished steps did: the same config and --set, the same threshold)."""
    good_sha, bad_sha, commits = commit_range(source, good, bad)
    old = load_state(out)
    if old is not None and not resume:
        raise BisectError(f"{out / BISECT} exists: pass --resume to continue it, or another --out")
    if old is not None:
        if (old.good, old.bad, old.metric) != (good_sha, bad_sha, metric):
            raise BisectError(
                f"--resume: {out / BISECT} is a bisect of {old.good[:10]}..{old.bad[:10]} on {old.metric}, "
                f"not of {good_sha[:10]}..{bad_sha[:10]} on {metric}"
            )
        if old.config is not None and config is not None and old.config != config:
            raise BisectError(
                f"--resume: {out / BISECT} was measured with another config (or other --set values); its "
                "finished steps would be judged beside steps measured differently: give the same CONFIG "
                "and --set, or another --out for a new bisect"
            )
        if old.threshold != threshold:
            raise BisectError(
                f"--resume: {out / BISECT} decided its steps at --threshold {old.threshold:.1%}, not "
                f"{threshold:.1%}: give the same threshold, or another --out for a new bisect"
            )
        # unfinished steps are measured again, and so is an undecided one: its runs go on where they
        # stopped, with the rounds a new --budget (or the rest of max_repetitions) allows
        old.steps = [s for s in old.steps if s.side in ("good", "bad")]
        return old
    return BisectState(
        source=str(source),
        good=good_sha,
        bad=bad_sha,
        metric=metric,
        threshold=threshold,
        commits=commits,
        config=config,
    )


class Measured(BaseModel):
    """One run of a step: its paired decisions and, for an undecided one, why its rounds ended."""

    decisions: list  # CellDecision
    rounds_end: str = ""


# A step's run: (base sha, head sha, run folder, seconds of rounds or None, still-open decisions)
Measure = Callable[[str, str, Path, float | None, frozenset[Status]], Measured]
# Against good the gate's rule: rounds until each cell passes, fails or improves. Against bad only
# "improved" decides something, so a cell that passes (no slowdown) wants more pairs too.
OPEN_AGAINST_GOOD = STILL_OPEN
OPEN_AGAINST_BAD = STILL_OPEN | {Status.PASS}


def run(
    out: Path,
    state: BisectState,
    measure: Measure,
    on_step: Callable[[Step], None] | None = None,
    budget_s: float | None = None,
) -> BisectState:
    """Measure midpoints until the first bad commit is found or a step stays undecided. ``budget_s``
    is a step's: half for the run against good, what it left for the run against bad (if needed)."""
    for step in state.steps:  # replayed from --resume
        if on_step is not None:
            on_step(step)
    while (index := state.next_index()) is not None:
        commit = state.commits[index]
        step = Step(
            index=index, commit=commit.sha, run_dir=str(out / f"step-{len(state.steps) + 1}-{commit.short}")
        )
        state.steps.append(step)
        save_state(out, state)
        started = time.monotonic()
        half = None if budget_s is None else budget_s / 2
        first = measure(state.good, commit.sha, Path(step.run_dir), half, OPEN_AGAINST_GOOD)
        for field, value in step_result(first):  # StepResult's fields, which a Step has too
            setattr(step, field, value)
        left = None if budget_s is None else budget_s - (time.monotonic() - started)
        if step.status == Status.TOO_NOISY and (left is None or left > 0):
            against = f"{step.run_dir}-vs-bad"
            step.against_bad = Versus(run_dir=against)
            save_state(out, state)
            second = faster_than_bad(measure(state.bad, commit.sha, Path(against), left, OPEN_AGAINST_BAD))
            step.against_bad = Versus(run_dir=against, **second.model_dump())
        save_state(out, state)
        if on_step is not None:
            on_step(step)
    return state


def step_result(measured: Measured) -> StepResult:
    """A step's verdict against good: any fail makes the midpoint bad, any undecided leaves it so, else
    good. The worst cell is shown; of equal status one with a ratio before the greedy text check."""
    if not measured.decisions:
        return StepResult(status=Status.TOO_NOISY, reason=NO_PAIRS)
    rank = {Status.FAIL: 0, Status.TOO_NOISY: 1, Status.PASS: 2, Status.IMPROVED: 3}
    worst = min(
        measured.decisions,
        key=lambda d: (rank.get(d.status, 2), d.ratio is None, d.ratio if d.ratio is not None else 1.0),
    )
    return _shown(worst, worst.status, measured.rounds_end)


def faster_than_bad(measured: Measured) -> StepResult:
    """The midpoint (head) against bad (base): improved when every cell is significantly faster beyond
    the threshold (the regression lies after it), else undecided; the greedy text check says nothing
    of where a slowdown is, so it is left out. The least improved cell shows."""
    cells = [d for d in measured.decisions if d.metric != OUTPUT]
    if not cells:
        return StepResult(status=Status.TOO_NOISY, reason=NO_PAIRS)
    least = min(cells, key=lambda d: (d.status == Status.IMPROVED, d.ratio if d.ratio is not None else 0.0))
    improved = least.status == Status.IMPROVED
    return _shown(least, Status.IMPROVED if improved else Status.TOO_NOISY, measured.rounds_end)


def _shown(d, status: Status, rounds_end: str) -> StepResult:
    """A step's result shown by one cell's decision ``d``; an undecided one says why its rounds ended."""
    reason = f"{d.cell}: {d.reason}"
    if status == Status.TOO_NOISY and rounds_end:
        reason += f"; {rounds_end}"
    return StepResult(status=status, ratio=d.ratio, ci_low=d.ci_low, ci_high=d.ci_high, reason=reason)

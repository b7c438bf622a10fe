"""``repetitions: auto``: repeat, in rounds, until every cell's mean t/s is as precise as asked.

Round 1 runs ``min_repetitions`` of everything; after each round, every speculative cell and
baseline whose mean t/s misses ``precision`` (``results.precision``) gets one more repetition, up to
``max_repetitions``. A round is cut from the plan of ``max_repetitions``, so the sweep's order holds
and a cell's repetition brings its baseline (and draft alone) of the same repetition, which speedups
and output checks pair it with. ``ab`` and ``bisect`` stop on the paired gate's ``undecided`` cells
instead, within an optional ``deadline`` (``--budget``): a round starts only if it would end by then
at the pace of the round before it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from specbench.results.bracket import AFTER
from specbench.results.cell import alone_of, baseline_of, cell_of, draft_alone_of
from specbench.results.precision import stratified
from specbench.results.records import Measurement, Sample

if TYPE_CHECKING:
    from specbench.plan.invocation import Invocation


def _key(m: Measurement) -> tuple:
    """What the stop rule judges a sample under: its cell, or for a baseline its own key."""
    return cell_of(m) if m.role == "speculative" else baseline_of(m)


@dataclass
class CellState:
    """One cell's samples so far, as the stop rule sees them."""

    reps: int = 0  # repetitions planned (highest recorded repetition + 1)
    by_prompt: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    any_valid: bool = False


def cell_states(samples: Sequence[Sample]) -> dict[tuple, CellState]:
    """Speculative cells by ``cell_of``, baselines by ``baseline_of``."""
    states: dict[tuple, CellState] = defaultdict(CellState)
    for s in samples:
        if s.role not in ("speculative", "baseline"):
            continue
        st = states[_key(s)]
        st.reps = max(st.reps, s.repetition + 1)
        if s.usable and s.tps is not None:
            st.by_prompt[s.prompt_id].append(s.tps)
            st.any_valid = True
    return states


@dataclass
class AdaptivePlan:
    """Cuts rounds out of ``full`` (every measured invocation for ``maximum`` repetitions)."""

    full: list[Invocation]
    precision: float
    maximum: int
    rounds: int = 0
    # ab's paired gate: the samples of the cells still undecided, which alone get another
    # repetition (None: the precision rule)
    undecided: Callable[[Sequence[Sample]], Sequence[Sample]] | None = None
    deadline: float | None = None  # time.monotonic() by which the last round ends (--budget)
    budget_spent: bool = False  # a round was wanted that would have ended after the deadline
    _running: tuple[float, int] | None = None  # (start, invocations) of the round running: its pace

    def started(self, invocations: int) -> None:
        """The first round (the plan ``execute`` was given) starts now, with this many invocations."""
        self._running = (time.monotonic(), invocations)

    def _would_overrun(self, invocations: int) -> bool:
        now = time.monotonic()
        if self.deadline is None:
            return False
        if now >= self.deadline:
            return True
        if self._running is None or self._running[1] == 0:
            return False
        began, count = self._running
        return now + (now - began) / count * invocations > self.deadline

    def precise(self, state: CellState) -> bool:
        return stratified(list(state.by_prompt.values())).meets(self.precision)

    def _targets(self, samples: Sequence[Sample], grow: bool) -> dict[tuple, int]:
        states = cell_states(samples)
        undecided = self.undecided if grow else None  # ab's gate names the cells that get another
        open_keys = {_key(s) for s in undecided(samples)} if undecided is not None else None
        targets = {}
        for key, st in states.items():
            # one more below the maximum, with something valid (a cell that never produced a valid
            # sample cannot be made precise by repeating it; the report says why), where not yet
            # precise (or where ``undecided`` names it)
            more = grow and st.reps < self.maximum and st.any_valid
            more = more and (key in open_keys if open_keys is not None else not self.precise(st))
            targets[key] = st.reps + (1 if more else 0)
        return targets

    def _needed(self, inv: Invocation, targets: dict[tuple, int], spec_cells: dict[tuple, Invocation]) -> int:
        if inv.role == "speculative":
            return targets.get(cell_of(inv), 0)
        if inv.role in ("baseline", AFTER):  # the server runner's bracket repeats with its baseline
            group = baseline_of(inv)
            cells = [targets.get(k, 0) for k, c in spec_cells.items() if baseline_of(c) == group]
            return max([targets.get(group, 0), *cells])
        # a draft model alone: as long as a cell using it (on its build, at its layers) runs
        alone = alone_of(inv)
        users = [targets.get(k, 0) for k, c in spec_cells.items() if draft_alone_of(c) == alone]
        return max(users, default=0)

    def _cut(self, samples: Sequence[Sample], grow: bool) -> list[Invocation]:
        targets = self._targets(samples, grow)
        done = {s.sample_key() for s in samples}
        spec_cells = {cell_of(i): i for i in self.full if i.role == "speculative"}
        return [
            inv
            for inv in self.full
            if inv.repetition < self._needed(inv, targets, spec_cells) and inv.sample_key() not in done
        ]

    def next_round(self, samples: Sequence[Sample]) -> list[Invocation]:
        """One more repetition of every cell (and baseline) that misses the precision (or that
        ``undecided`` names); [] when done, at the maximum, or when it would end past the deadline."""
        plan = self._cut(samples, grow=True)
        if plan and self._would_overrun(len(plan)):
            self.budget_spent = True
            return []
        if plan:
            self.rounds += 1
            self._running = (time.monotonic(), len(plan))
        return plan

    def resume_plan(self, samples: Sequence[Sample]) -> list[Invocation]:
        """On --resume: the repetitions already planned that are not recorded yet."""
        return self._cut(samples, grow=False)

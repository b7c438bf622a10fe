"""How ``specbench tune`` spends ``--budget``: every second of the command counts, calibration included.

The probe's first prompt tells how long a run takes here, hence the least the whole search can cost
(the rest of the probe, the cheapest calibration, one round): a budget below it is refused, naming
the minimum. Calibration gets at most ``CALIBRATION_SHARE`` of the budget, on the densest grid of
k's that fits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from specbench.base.errors import RunError, SpecbenchError
from specbench.execute import preparation
from specbench.gate.history import plan_estimate
from specbench.results.records import Sample
from specbench.tune.calibrate import DECODE_TOKENS, GRIDS, pass_sizes

CALIBRATION_SHARE = 0.1  # of the budget, at most, for llama-bench (the default 300 s: 30 s)
LEVELS = [(0, 2), *((level, 1) for level in range(len(GRIDS)))]  # (grid level, repetitions), dearest first


class BudgetTooSmall(RunError):
    """``--budget`` cannot hold the probe, the cheapest calibration and one round on this machine."""


@dataclass
class Clock:
    budget_s: float
    t0: float = field(default_factory=time.monotonic)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def left(self) -> float:
        return self.budget_s - self.elapsed()

    def affordable(self, seconds: float) -> bool:
        return seconds <= self.left()


@dataclass
class RunCosts:
    """What the probe's samples say a run and a llama-bench test cost here."""

    per_run_s: float  # mean wall time of one llama.cpp run
    load_s: float  # loading the target
    prefill_tps: float  # the target's prompt processing, tokens/s
    decode_tps: float  # the target's decode, tokens/s

    @classmethod
    def from_samples(cls, samples: Sequence[Sample]) -> RunCosts:
        walls = [s.wall_s for s in samples]
        perf = [s.metrics.perf.target for s in samples if s.role == "baseline"
                and s.metrics and s.metrics.perf and s.metrics.perf.target]  # fmt: skip
        load = [p.load_ms / 1000 for p in perf if p.load_ms]
        pre = [p.prompt_eval_tps for p in perf if p.prompt_eval_tps]
        dec = [p.eval_tps for p in perf if p.eval_tps]

        def mean(xs: list[float], default: float) -> float:
            return sum(xs) / len(xs) if xs else default

        per_run = mean(walls, 5.0)
        return cls(per_run, mean(load, per_run / 4), mean(pre, 100.0), mean(dec, 10.0))


def calibration_seconds(costs: RunCosts, depth: int, ks: list[int], reps: int, n_models: int) -> float:
    """llama-bench's time for a pass over each k and a tg test, ``reps`` times after filling the KV
    cache to ``depth``, plus a warmup of each; every model priced as the target (an upper bound)."""
    fills = (len(ks) + 1) * reps * depth / costs.prefill_tps
    passes = (reps + 1) * (sum(ks) / costs.prefill_tps + DECODE_TOKENS / costs.decode_tps)
    return n_models * (costs.load_s + fills + passes)


@dataclass
class CalibrationPlan:
    level: int  # of calibrate.GRIDS
    reps: int
    seconds: float  # llama-bench's time, estimated


def plan_calibration(
    clock: Clock, costs: RunCosts, depth: int, max_draft: int, n_models: int, runs_left: int, round_runs: int
) -> CalibrationPlan:
    """The densest calibration this budget affords after the rest of the probe and one round;
    BudgetTooSmall when not even the cheapest one fits, naming the least budget that would do."""
    reserve = (runs_left + round_runs) * costs.per_run_s
    last, one = LEVELS[-1]
    cheapest = calibration_seconds(costs, depth, pass_sizes(max_draft, last), one, n_models)
    least = clock.elapsed() + reserve + cheapest
    if least > clock.budget_s:
        raise BudgetTooSmall(
            f"--budget {clock.budget_s:g} is too small for this config here: a run takes "
            f"{costs.per_run_s:.1f} s, so the probe, the cheapest calibration and one round need about "
            f"{least:.0f} s; give --budget {math.ceil(least * 1.1)} or more (or fewer prompts)"
        )
    allowed = min(CALIBRATION_SHARE * clock.budget_s, clock.left() - reserve)
    for level, reps in LEVELS:
        s = calibration_seconds(costs, depth, pass_sizes(max_draft, level), reps, n_models)
        if s <= allowed:
            return CalibrationPlan(level, reps, s)
    return CalibrationPlan(last, one, cheapest)


TAIL_S = 1.0  # the closing noise check (0.5 s of idle sampling) and the manifest's last write


def per_run(spent: list[float]) -> float:
    """Seconds a measured run has cost, everything counted: the dearest round so far after the first
    (whose warmups would overprice every later one), so a round priced from it ends in time."""
    return max(spent[1:] or spent) if spent else 5.0


def check_history_floor(clock: Clock, prepared: preparation.Prepared, note: Callable[[str], None]) -> None:
    """Refuse up front a budget below the least this machine's history says tune takes (priced as the
    check after the probe's first prompt prices it); without history, say when it will be known."""
    try:
        known = plan_estimate(prepared.build.backend).known
    except SpecbenchError:  # an unreadable history only loses the early check
        known = None
    runs = [i for i in prepared.plan.invocations if i.role in ("baseline", "speculative")]  # tune's probe
    guesses = [known(i) for i in runs] if known else []
    if not guesses or any(g is None for g in guesses):
        note(
            "budget: this machine's history has no run of this pair yet, so the least budget is known "
            "after the probe's first prompt"
        )
        return
    probe_s = sum(g for g in guesses if g is not None)  # its warmups included
    measured = [g for i, g in zip(runs, guesses, strict=True) if not i.warmup and g is not None]
    run_s = sum(measured) / max(1, len(measured))
    # the probe, one round of a setting (a baseline and a speculative run a prompt), the cheapest
    # calibration (about a run a model), the closing check; the later check's 10% margin, and 10%
    # for the runs' own bookkeeping that history's t/s does not see
    least = (probe_s + 2 * len(prepared.prompts) * run_s + 2 * run_s + TAIL_S) * 1.1 * 1.1
    if least > clock.left():
        raise BudgetTooSmall(
            f"--budget {clock.budget_s:g} is too small for this config here: this machine's history puts "
            f"the probe, the cheapest calibration and one round at about {least:.0f} s; give --budget "
            f"{math.ceil(least)} or more, or fewer prompts"
        )

"""How tune spends --budget: calibration scales with it, and a budget below the minimum is refused."""

import time

import pytest

from specbench.tune.budget import (
    CALIBRATION_SHARE,
    LEVELS,
    BudgetTooSmall,
    Clock,
    RunCosts,
    calibration_seconds,
    plan_calibration,
)
from specbench.tune.calibrate import pass_sizes

COSTS = RunCosts(per_run_s=3.0, load_s=0.2, prefill_tps=500.0, decode_tps=50.0)


def clock(budget: float, spent: float = 0.0) -> Clock:
    return Clock(budget, t0=time.monotonic() - spent)


def test_calibration_costs_grow_with_k_repetitions_depth_and_models():
    dense, sparse = pass_sizes(32, 0), pass_sizes(32, len(LEVELS) - 2)
    assert len(sparse) < len(dense)
    base = calibration_seconds(COSTS, 300, dense, 2, 2)
    assert calibration_seconds(COSTS, 300, sparse, 2, 2) < base
    assert calibration_seconds(COSTS, 300, dense, 1, 2) < base
    assert calibration_seconds(COSTS, 600, dense, 2, 2) > base
    assert calibration_seconds(COSTS, 300, dense, 2, 1) == pytest.approx(base / 2)


def test_a_bigger_budget_buys_a_denser_calibration_within_its_share():
    budgets = (60, 300, 3000)
    plans = [plan_calibration(clock(b), COSTS, 300, 32, 2, runs_left=4, round_runs=6) for b in budgets]
    assert [p.level for p in plans] == sorted((p.level for p in plans), reverse=True)  # denser with more
    assert (plans[-1].level, plans[-1].reps) == LEVELS[0]
    assert plans[0].level > plans[-1].level or plans[0].reps < plans[-1].reps
    for budget, plan in zip(budgets, plans, strict=True):
        fits = plan.seconds <= CALIBRATION_SHARE * budget
        assert fits or (plan.level, plan.reps) == LEVELS[-1]  # only the cheapest may pass its share


def test_a_budget_below_the_minimum_is_refused_naming_the_minimum():
    with pytest.raises(BudgetTooSmall) as err:
        plan_calibration(clock(30, spent=10), COSTS, 300, 32, 2, runs_left=4, round_runs=6)
    msg = str(err.value)
    least = 10 + 10 * 3.0  # spent + (4 + 6 runs) x 3 s, + the cheapest calibration
    given = int(msg.split("give --budget ")[1].split()[0])
    assert "--budget 30 is too small" in msg and given > least * 1.1
    # the same machine with that budget is not refused
    plan_calibration(clock(given, spent=10), COSTS, 300, 32, 2, runs_left=4, round_runs=6)


def test_a_round_is_priced_by_the_dearest_warmup_free_round():
    from specbench.tune.budget import per_run

    assert per_run([]) == 5.0  # nothing measured yet: a guess
    assert per_run([3.0]) == 3.0  # the probe's first prompt alone (warmups included)
    assert per_run([3.0, 0.8, 1.1]) == 1.1  # later rounds: server starts and bookkeeping counted

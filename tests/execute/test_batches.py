"""The process runner measures a pair (the builds' runs of one cell, prompt and repetition) as one
batch, so the pair can be measured again together; each sample keeps its own start time."""

from __future__ import annotations

from datetime import UTC, datetime

from specbench.execute.judge import Outcome
from specbench.execute.runner import batch_at, starts
from tests.helpers.fakeruns import inv


def test_a_pair_is_one_batch_and_nothing_else_joins_it():
    plan = [
        inv("plain", role="baseline", build="a", warmup=True),
        inv("plain", role="baseline", build="b", warmup=True),  # warmups run one by one
        inv("plain", role="baseline", build="a"),
        inv("plain", role="baseline", build="b"),
        inv("plain", build="a"),  # another cell: the next pair
        inv("plain", build="b"),
        inv("plain", build="a", prompt_id="p2"),  # a lone run: a batch of one
    ]
    assert batch_at(plan, 0, set()) == ([(0, plan[0])], 1)
    assert batch_at(plan, 1, set()) == ([(1, plan[1])], 2)
    assert batch_at(plan, 2, set()) == ([(2, plan[2]), (3, plan[3])], 4)
    assert batch_at(plan, 4, set()) == ([(4, plan[4]), (5, plan[5])], 6)
    assert batch_at(plan, 6, set()) == ([(6, plan[6])], 7)
    done = {plan[3].sample_key()}  # a resumed run: the finished side is not run again
    assert batch_at(plan, 2, done) == ([(2, plan[2])], 4)


def test_a_pairs_samples_start_one_after_the_other_a_servers_requests_together():
    started = datetime(2026, 11, 25, 15, 0, 0, tzinfo=UTC)
    outcomes = [Outcome(wall_s=2.4), Outcome(wall_s=3.0)]
    assert starts(started, outcomes, one_by_one=True) == [
        "2026-11-25T15:00:00+00:00",
        "2026-11-25T15:00:02+00:00",
    ]
    assert starts(started, outcomes, one_by_one=False) == ["2026-11-25T15:00:00+00:00"] * 2

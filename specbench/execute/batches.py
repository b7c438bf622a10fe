"""Which invocations of a plan run together, and when each began: the runner's batches.

The process runner's batch is a pair: the builds' runs of one cell, prompt and repetition, back to
back (or at once in duet pairs), measured again together when one did not get its share of the CPU
(``specbench.execute.contention``). The server runner's batch is its ``parallel`` requests in flight
together.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specbench.plan.invocation import Invocation


def starts(started: datetime, outcomes: Sequence, one_by_one: bool) -> list[str]:
    """When each invocation of a batch began: one after the other (the process runner's pair), or
    all at ``started`` (the server runner's requests in flight together)."""
    out, offset = [], 0.0
    for outcome in outcomes:
        out.append((started + timedelta(seconds=offset)).isoformat(timespec="seconds"))
        offset += outcome.wall_s if one_by_one else 0.0
    return out


def pair_key(inv: Invocation) -> tuple:
    return inv.model_copy(update={"build": None}).sample_key()


def batch_at(
    plan: Sequence[Invocation], i: int, done: set[tuple]
) -> tuple[list[tuple[int, Invocation]], int]:
    """The invocations from ``i`` on that are in flight together (same ``batch``; finished ones of a
    resumed run left out), and the index after them. The process runner's batch is a pair: the
    builds' runs of one cell, prompt and repetition, back to back, measured again together when one
    did not get its share of the CPU (``execute.contention``)."""
    batch = [(i, plan[i])]
    j = i + 1
    if plan[i].batch is None:
        key = None if plan[i].warmup else pair_key(plan[i])
        partner = lambda inv: not inv.warmup and inv.batch is None and pair_key(inv) == key  # noqa: E731
        while key and j < len(plan) and partner(plan[j]):
            if plan[j].sample_key() not in done:
                batch.append((j, plan[j]))
            j += 1
        return batch, j
    while plan[i].batch is not None and j < len(plan) and plan[j].batch == plan[i].batch:
        if plan[j].warmup or plan[j].sample_key() not in done:
            batch.append((j, plan[j]))
        j += 1
    return batch, j

"""Which invocations of a plan run together, and when each began: the runner's batches.

The process runner's batch is a pair: the builds' runs of one cell, prompt and repetition, back to
back (or at once in duet pairs), measured again together when one did not get its share of the CPU
(``machine.contention`` judges the share; here it is read off each outcome). The server runner's
batch is its ``parallel`` requests in flight together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from specbench.machine import contention, noise

if TYPE_CHECKING:
    from specbench.execute.judge import Outcome
    from specbench.plan.invocation import Invocation
    from specbench.results.records import Sample


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
    """The invocations from ``i`` on that form one batch (finished ones of a resumed run left out),
    and the index after them."""
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


def _load_s(out: Outcome) -> float:
    """Seconds the process spent loading its models (llama.cpp's ``load time``): one thread reads
    the weights, so that part of the wall time has one thread's CPU, not ``threads``'."""
    perf = out.log.perf if out.log is not None and out.log.perf is not None else None
    ms = sum(p.load_ms or 0.0 for p in (perf.target, perf.draft) if p is not None) if perf else 0.0
    return ms / 1000 if ms > 0 and math.isfinite(ms) else 0.0


def starved(inv: Invocation, out: Outcome, backend: str | None) -> str | None:
    """Why this outcome is not judged (``contention.starved``), or None: judged only for CPU builds,
    a measured run that finished, and threads the config set."""
    threads = inv.generation.threads
    if backend != "cpu" or inv.warmup or out.error is not None or not threads:
        return None
    if out.batch_wall_s is not None:  # a server loaded before its batch
        return contention.starved(threads, out.cpu_s, out.batch_wall_s)
    return contention.starved(threads, out.cpu_s, out.wall_s, _load_s(out))


def first_starved(
    batch: Sequence[tuple[int, Invocation]], outcomes: Sequence[Outcome], backend: str | None
) -> str | None:
    """The first reason in a batch (a pair, or the server's requests in flight together)."""
    for (_, inv), out in zip(batch, outcomes, strict=True):
        if (why := starved(inv, out, backend)) is not None:
            return f"{inv.role} {inv.model}{f' on {inv.build}' if inv.build else ''}, {inv.prompt_id}: {why}"
    return None


def stamp(sample: Sample, inv: Invocation, out: Outcome, reruns: int) -> Sample:
    """The sample with what it got of the CPU, the load as it ended, and its pair's re-runs."""
    cpu = round(out.cpu_s, 4) if out.cpu_s is not None else None
    threads = inv.generation.threads
    return sample.model_copy(
        update={"cpu_s": cpu, "cpu_threads": threads, "load_1m": noise.load_1m(), "reruns": reruns}
    )

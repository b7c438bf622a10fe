"""What a report must say about the runs it shows before anyone reads its numbers: an incomplete
run, runs measured with different generation settings side by side, outputs not compared."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from specbench.results.runstate import finish_hint

if TYPE_CHECKING:
    from specbench.results.records import Generation


class RunInfo(BaseModel):
    """What a caption says about a run: where it ran and on which llama.cpp."""

    run: str
    path: str
    started_at: str | None = None
    machine: str = "unknown machine"
    backend: str | None = None
    commit: str | None = None
    n_samples: int = 0
    n_failed: int = 0
    n_invalid: int = 0
    pairing: str = "sequential"  # duet: each build measured on half the CPUs beside the other
    n_rerun: int = 0  # samples whose pair was measured again (a process did not get its CPU share)
    status: str | None = None  # the manifest's: complete, interrupted, failed, running
    generation: list[str] = []  # the generation settings its samples used, one text each
    # the speed sentinel (specbench.builder.speed): seconds since the first reading, t/s, the verdict
    speed_s: list[float] = []
    speed_tps: list[float] = []
    speed_reference: str | None = None
    speed_precision: float | None = None  # the threshold its verdict used
    speed_warnings: list[str] = []
    speed_notes: list[str] = []  # moves that fell between pairs: the paired figures cancel them

    @property
    def incomplete(self) -> bool:
        return self.status not in (None, "complete")

    def caption(self) -> str:
        commit = (self.commit or "unknown")[:10]
        state = f" (INCOMPLETE: {self.status})" if self.incomplete else ""
        return f"{self.run}{state}: {self.machine}; backend {self.backend or 'unknown'}; llama.cpp {commit}"


def generation_text(g: Generation) -> str:
    """The settings that define the work or its speed (compare names the same ones), in words."""
    return (
        f"n_predict {g.n_predict}, temperature {g.temperature:g}, "
        f"top_k {g.top_k if g.top_k is not None else 'default'}, seed {g.seed}, "
        f"threads {g.threads if g.threads is not None else 'default'}, ctx_size {g.ctx_size}"
    )


def caveats(infos: list[RunInfo]) -> list[str]:
    notes = []
    for info in infos:
        if info.incomplete:
            notes.append(
                f"Run {info.run} is incomplete ({info.status}): some cells may be missing, so no setting "
                f"is marked best; {finish_hint(Path(info.path), info.status)}."
            )
        if any(", temperature 0," not in g for g in info.generation):
            notes.append(
                f"Run {info.run} samples at temperature > 0: outputs differ by design, so `match` is `-` "
                "(outputs are compared with the baseline's only at temperature 0)."
            )
        if info.n_rerun:
            notes.append(
                f"Run {info.run}: {info.n_rerun} sample{'s' * (info.n_rerun != 1)} come from pairs measured "
                "again because a process of the pair did not get its share of the CPU (something else ran "
                "beside it); the samples' `reruns` and `cpu_s` say which and how much."
            )
        if info.pairing == "duet":
            notes.append(
                f"Run {info.run} measured its builds in duet pairs: both at the same time, each on half the "
                "CPUs with half the threads; its t/s are half-machine figures, and what it judges is the "
                "ratio of each pair (docs/decide.md)."
            )
        for note in info.speed_notes:
            notes.append(f"Run {info.run}: {note}.")
        for warning in info.speed_warnings:
            notes.append(
                f"Run {info.run}: {warning}: cells measured on either side of the change ran at different "
                "machine speeds; compare its speedups with care, or measure again when the host is steady."
            )
    if len({tuple(i.generation) for i in infos}) > 1:
        settings = "; ".join(f"{i.run}: {' | '.join(i.generation)}" for i in infos)
        notes.append(
            f"The runs used different generation settings ({settings}): side by side, their t/s are "
            "not the same measurement."
        )
    return notes

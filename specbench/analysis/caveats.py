"""What a report must say about the runs it shows before anyone reads its numbers: an incomplete
run, runs measured with different generation settings side by side, outputs not compared, a busy or
moving machine.

Each is a ``Caveat`` keyed by the fact it states, so that ``said_once`` says each fact once,
warnings first, however many sources (the manifest, the run's summary, the report) hold it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from specbench.base.docs import docs_page
from specbench.machine.contention import RERUN_NOTE_END
from specbench.plan.pairing import DUET_DOCS
from specbench.results.manifest import RunFacts
from specbench.results.runstate import finish_hint

if TYPE_CHECKING:
    from specbench.results.records import Generation


class RunInfo(BaseModel):
    """A run as the report shows it beside its rows: its manifest's facts (the machine, llama.cpp,
    the noise check and the speed sentinel) and what its samples say."""

    run: str
    path: str
    facts: RunFacts
    n_samples: int = 0
    n_failed: int = 0
    n_invalid: int = 0
    n_rerun: int = 0  # samples whose pair was measured again (a process did not get its CPU share)
    generation: list[str] = []  # the generation settings its samples used, one text each

    @property
    def incomplete(self) -> bool:
        return self.facts.status not in (None, "complete")

    def caption(self) -> str:
        """Where it ran and on which llama.cpp."""
        machine, commit = self.facts.machine, (self.facts.llama_cpp_commit or "unknown")[:10]
        gpus = f" + {', '.join(machine.gpus)}" if machine.gpus else ""
        state = f" (INCOMPLETE: {self.facts.status})" if self.incomplete else ""
        where = f"{machine.cpu_model or 'unknown CPU'}{gpus}; backend {machine.backend or 'unknown'}"
        return f"{self.run}{state}: {where}; llama.cpp {commit}"


def generation_text(g: Generation) -> str:
    """The settings that define the work or its speed (compare names the same ones), in words."""
    return (
        f"n_predict {g.n_predict}, temperature {g.temperature:g}, "
        f"top_k {g.top_k if g.top_k is not None else 'default'}, seed {g.seed}, "
        f"threads {g.threads if g.threads is not None else 'default'}, ctx_size {g.ctx_size}"
    )


class Severity(IntEnum):
    """How much a caveat matters: warnings first."""

    WARNING = 0  # the numbers may be off: a busy or moving machine, lost samples, unlike runs side by side
    NOTE = 1  # how they were made: worth knowing, no reason to doubt them


@dataclass(frozen=True)
class Caveat:
    """One thing a report or a run's end says about its numbers. ``key`` is the fact it states: the
    same fact from two sources (the manifest's record, the run's summary, the report) is said once."""

    severity: Severity
    key: str
    text: str

    def line(self) -> str:
        """As the terminal shows it: a warning loudly, a note plainly."""
        return f"{'WARNING' if self.severity == Severity.WARNING else 'note'}: {self.text}"


def warning(key: str, text: str) -> Caveat:
    return Caveat(Severity.WARNING, key, text)


def note(key: str, text: str) -> Caveat:
    return Caveat(Severity.NOTE, key, text)


SHOWN = 6  # caveats a run's end shows on the terminal; the rest are in `specbench report`


def said_once(found: Iterable[Caveat]) -> list[Caveat]:
    """Each fact once, warnings before notes, otherwise in the order first said. A fact said by
    several sources keeps its first place, its most severe saying's severity and its last wording
    (a caller gives its own, most specific wording last)."""
    place: dict[str, int] = {}
    by_key: dict[str, Caveat] = {}
    for i, c in enumerate(found):
        place.setdefault(c.key, i)
        old = by_key.get(c.key)
        by_key[c.key] = c if old is None else Caveat(min(old.severity, c.severity), c.key, c.text)
    return sorted(by_key.values(), key=lambda c: (c.severity, place[c.key]))


def machine_caveats(
    run: str, busy: Iterable[str], speed_warnings: Iterable[str], speed_notes: Iterable[str],
    noise_notes: Iterable[str], sentinel: str | None = None,
) -> list[Caveat]:  # fmt: skip
    """What the machine did during a run (the noise check, the speed sentinel), declared once for the
    report (from the manifest) and a run's end (from its summary)."""
    out = [
        warning(
            f"busy:{run}:{reason}",
            f"busy machine: {reason}; run {run}'s numbers may be meaningless (--strict refuses)",
        )
        for reason in busy
    ]
    out += [
        warning(
            f"speed:{run}:{w}",
            f"Run {run}: {w}: cells measured on either side of the change ran at different machine "
            "speeds; compare its speedups with care, or measure again when the host is steady "
            "(--strict refuses)",
        )
        for w in speed_warnings
    ]
    out += [note(f"speed:{run}:{n}", f"Run {run}: {n}.") for n in speed_notes]
    out += [
        note(f"rerun:{run}" if n.endswith(RERUN_NOTE_END) else f"noise:{run}:{n}", n) for n in noise_notes
    ]
    if sentinel:
        out.append(note(f"sentinel:{run}", sentinel))
    return out


def caveats(infos: list[RunInfo]) -> list[Caveat]:
    """What the runs' manifests say about their numbers (each run's machine, how it ran)."""
    notes: list[Caveat] = []
    for info in infos:
        if info.incomplete:
            text = (
                f"Run {info.run} is incomplete ({info.facts.status}): some cells may be missing, so no "
                f"setting is marked best; {finish_hint(Path(info.path), info.facts.status)}."
            )
            notes.append(warning(f"incomplete:{info.run}", text))
        if any(", temperature 0," not in g for g in info.generation):
            text = (
                f"Run {info.run} samples at temperature > 0: outputs differ by design, so `match` is `-` "
                "(outputs are compared with the baseline's only at temperature 0)."
            )
            notes.append(note(f"temperature:{info.run}", text))
        if info.n_rerun:
            text = (
                f"Run {info.run}: {info.n_rerun} sample{'s' * (info.n_rerun != 1)} come from pairs measured "
                "again because a process of the pair did not get its share of the CPU (something else ran "
                "beside it); the samples' `reruns` and `cpu_s` say which and how much."
            )
            notes.append(note(f"rerun:{info.run}", text))
        if info.facts.pairing == "duet":
            text = (
                f"Run {info.run} measured its builds in duet pairs: both at the same time, each on half the "
                "CPUs with half the threads; its t/s are half-machine figures, and what it judges is the "
                f"ratio of each pair ({docs_page(*DUET_DOCS)})."
            )
            notes.append(note(f"duet:{info.run}", text))
        speed = info.facts.speed
        notes += machine_caveats(
            info.run, info.facts.busy, speed.warnings, speed.notes, info.facts.noise_notes, speed.describe()
        )
        if info.n_failed or info.n_invalid:
            text = (
                f"Run {info.run}: {info.n_failed} failed and {info.n_invalid} invalid of {info.n_samples} "
                f"samples are left out of the statistics (their reasons are in the samples and raw logs "
                f"in {info.path})."
            )
            notes.append(warning(f"failed:{info.run}", text))
    if len({tuple(i.generation) for i in infos}) > 1:
        settings = "; ".join(f"{i.run}: {' | '.join(i.generation)}" for i in infos)
        text = f"The runs used different generation settings ({settings})"
        notes.append(warning("generation", f"{text}: side by side, their t/s are not the same measurement."))
    return notes

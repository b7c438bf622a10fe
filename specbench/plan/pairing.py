"""How the two builds of a pair share the machine (config ``pairing``): one after the other, or at once.

- ``sequential``: A then B, the order reversed every pair (ABBA); each build has the whole machine.
- ``duet``: A and B at once, each on its own half of the CPUs (Bulej et al. 2020): whatever else
  takes the CPU slows both sides, so their ratio cancels it (docs/decide.md). CPU backends only.
- ``auto``: duet where it can run, else sequential."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from specbench.base.docs import docs_page
from specbench.base.errors import ConfigError
from specbench.machine.envinfo import our_cpus

if TYPE_CHECKING:
    from collections.abc import Iterable

    from specbench.plan.config import Config

Pairing = Literal["sequential", "duet"]  # what a plan runs with (config `pairing` adds auto)

# where the docs say what a duet pair measures (its note, and the report's caveat)
DUET_DOCS = ("decide.md", "the-default-pairing-auto-duet-on-cpu-builds")


@dataclass(frozen=True)
class Chosen:
    """The pairing a plan runs with; for duet, the two CPU sets and each side's threads."""

    pairing: Pairing
    cpu_sets: tuple[tuple[int, ...], ...] = ()
    threads: int | None = None
    note: str | None = None


def cpu_halves() -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Two disjoint CPU sets of equal size from those we may use (None: under 2, or no affinity)."""
    cpus = sorted(our_cpus() or ())
    half = len(cpus) // 2
    return (tuple(cpus[:half]), tuple(cpus[half : 2 * half])) if half else None


def side_threads(threads: int | None, half: int) -> int:
    """A duet side's threads: half the config's (at most a half's CPUs), or a half's CPUs when unset."""
    return half if threads is None else max(1, min(threads // 2, half))


def choose(config: Config, backends: Iterable[str | None]) -> Chosen:
    """The process plan's pairing here: ``duet`` that cannot run is refused, ``auto`` falls back."""
    wanted = config.pairing
    several = len(config.builds) > 1
    if wanted == "sequential" or (wanted == "auto" and not several):
        return Chosen("sequential")
    if not several:
        return Chosen("sequential", note=(
            "pairing: duet needs two builds to pair (ab, bisect, a llama_cpp list); this run has one, "
            "measured on the whole machine"))  # fmt: skip
    other = sorted({b or "unknown" for b in backends} - {"cpu"})
    halves = cpu_halves()
    why = None
    if len(config.builds) > 2:
        why = f"it pairs two builds at a time; this run has {len(config.builds)}"
    elif other:
        why = (
            f"builds on the {', '.join(other)} backend share one accelerator, which cannot be halved "
            "as CPUs can"
        )
    elif halves is None:
        why = "it needs two CPUs or more that this process may use (Linux CPU affinity)"
    if why is not None:
        if wanted == "duet":
            raise ConfigError(f"pairing: duet: {why}; set pairing: sequential")
        return Chosen("sequential", note=f"pairing: auto chose sequential: {why}" if not other else None)
    assert halves is not None
    threads = side_threads(config.generation.threads, len(halves[0]))
    sets = " | ".join(",".join(map(str, h)) for h in halves)
    of = f" of the config's {config.generation.threads}" if config.generation.threads else ""
    note = (
        f"pairing: duet: each pair's builds run at the same time, each on half the CPUs ({sets}) with "
        f"{threads} thread{'s' * (threads != 1)}{of}, the halves alternated by repetition and prompt; t/s "
        "are half-machine figures (pairing: sequential for whole-machine ones; "
        f"{docs_page(*DUET_DOCS)})"
    )
    return Chosen("duet", halves, threads, note)

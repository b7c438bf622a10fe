"""A run folder as a whole, as its readers (report, compare, baseline, history) see it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from specbench.results.manifest import RunFacts
from specbench.results.manifestfile import read_facts
from specbench.results.records import Sample
from specbench.results.samplelog import load_samples


@dataclass
class StoredRun:
    """A run folder as its readers (report, compare, baseline, history) see it."""

    path: Path
    facts: RunFacts
    samples: list[Sample]
    warnings: list[str] = field(default_factory=list)  # what reading it left out, for the user


def read_run(run_dir: Path, manifest_required: bool = True) -> StoredRun:
    warnings: list[str] = []
    samples = load_samples(run_dir, warnings)
    facts = read_facts(run_dir, samples, required=manifest_required)
    return StoredRun(run_dir, facts, samples, warnings)

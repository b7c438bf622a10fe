"""The manifest file: written atomically, read strictly (--resume) or tolerantly (reports), refused
from a newer format; and a whole run folder as its readers see it (``read_run``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from specbench import __version__
from specbench.base.errors import UnreadableRun
from specbench.base.formats import json_text
from specbench.results.folder import MANIFEST, has_manifest, write_whole
from specbench.results.manifest import FORMAT_VERSION, Manifest, RunFacts, facts_from_manifest
from specbench.results.records import Sample
from specbench.results.runlock import lock_holder
from specbench.results.samplelog import load_samples, why_invalid


def save_manifest(run_dir: Path, manifest: Manifest) -> None:
    intact = f"free space or fix permissions (samples already in {run_dir} are intact)"
    write_whole(run_dir / MANIFEST, json_text(manifest, ensure_ascii=False), intact)


def load_manifest(run_dir: Path) -> Manifest:
    """The strict manifest, for --resume (which must rebuild exactly what was run)."""
    data = manifest_data(run_dir)
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:  # the field and why, not pydantic's "1 validation error for Manifest"
        raise UnreadableRun(
            f"{run_dir / MANIFEST} is not a valid manifest ({why_invalid(exc)}); restore it from a copy; "
            "a run cannot be resumed without its manifest"
        ) from exc


def manifest_data(run_dir: Path) -> dict:
    path = run_dir / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UnreadableRun(f"{run_dir} has no {MANIFEST}; is it a specbench run folder?") from exc
    except ValueError as exc:
        raise UnreadableRun(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise UnreadableRun(f"{path} is not a JSON object; is it a specbench run folder?")
    _check_format(data, path)
    return data


def _check_format(data: dict, path: Path) -> None:
    """Refuse a folder from a newer specbench rather than misread it; older ones load as they are."""
    found = data.get("format_version", 0)
    if isinstance(found, bool) or not isinstance(found, int):
        raise UnreadableRun(f"{path} is not a valid manifest: format_version {found!r} is not a whole number")
    if found > FORMAT_VERSION:
        writer = data.get("specbench_version")
        raise UnreadableRun(
            f"{path.parent} is run folder format {found} (written by specbench {writer or 'unknown'}); "
            f"this specbench {__version__} reads formats up to {FORMAT_VERSION}: upgrade specbench to read it"
        )


def read_facts(run_dir: Path, samples: list[Sample] | None = None, required: bool = True) -> RunFacts:
    """The facts of a run's manifest, tolerant of older and hand-made ones (without one, the run id)."""
    fallback = samples[0].run_id if samples else run_dir.name
    running = lock_holder(run_dir) is not None
    if not required and not has_manifest(run_dir):
        return RunFacts(run_id=fallback, status="running" if running else None)
    facts = facts_from_manifest(manifest_data(run_dir), fallback)
    if running:
        facts.status = "running"
    elif facts.status == "running":  # nobody holds the lock: the run's process died mid-run
        facts.status = "interrupted"
        facts.status_reason = "its process ended without recording how (killed, or the machine stopped)"
    return facts


@dataclass
class StoredRun:
    """A run folder as a whole, as its readers (report, compare, baseline, history) see it."""

    path: Path
    facts: RunFacts
    samples: list[Sample]
    warnings: list[str] = field(default_factory=list)  # what reading it left out, for the user


def read_run(run_dir: Path, manifest_required: bool = True) -> StoredRun:
    warnings: list[str] = []
    samples = load_samples(run_dir, warnings)
    facts = read_facts(run_dir, samples, required=manifest_required)
    return StoredRun(run_dir, facts, samples, warnings)

"""The two sides of a comparison: a run folder or a committed baseline file, read the same way.

A baseline (``results/baselines/NAME.json``) is a compact copy of a run, meant to be committed: the
samples compare needs (without logs, commands or parsed metrics) and the run's manifest facts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from specbench import __version__
from specbench.base.errors import InputError, PathError, SpecbenchError
from specbench.base.files import write_atomic
from specbench.base.formats import json_text, now_iso
from specbench.base.paths import check_name, check_path, inside, os_problem, results_dir, shorten
from specbench.results.manifest import RunFacts
from specbench.results.manifestfile import read_run
from specbench.results.records import Sample
from specbench.results.runstate import finish_hint
from specbench.results.samplelog import unique_samples, why_invalid

FORMAT: Literal["specbench-baseline"] = "specbench-baseline"
FORMAT_VERSION = 1
ROLES_KEPT = ("baseline", "speculative")  # what the gate compares; draft-alone ones only feed the cost ratio
SAMPLE_FIELDS_DROPPED = {"metrics", "cmd", "stdout_path", "stderr_path"}
MAX_NAME = 200  # NAME.json must fit a file name (255 bytes)


class BaselineFile(BaseModel):
    format: Literal["specbench-baseline"] = FORMAT
    version: int = FORMAT_VERSION
    name: str
    saved_at: str
    source: str  # the run folder it was saved from
    facts: RunFacts
    samples: list[Sample]


class Side(BaseModel):
    """One side of a comparison, however it was given."""

    ref: str  # what the user passed
    kind: Literal["run", "baseline"]
    facts: RunFacts
    samples: list[Sample]
    notes: list[str] = []  # what reading it left out (duplicates, a torn last line), for the user


def load_run(run_dir: Path) -> Side:
    try:
        run = read_run(run_dir)
    except SpecbenchError as exc:
        raise InputError(str(exc)) from exc
    return Side(ref=str(run_dir), kind="run", facts=run.facts, samples=run.samples, notes=run.warnings)


def running_notes(side: Side) -> list[str]:
    """A run still being written is compared as far as it got: said, since its cells may be missing."""
    if side.kind != "run" or side.facts.status != "running":
        return []
    return [f"{side.ref} is partial: {finish_hint(Path(side.ref), 'running')}"]


def load_baseline_file(path: Path) -> Side:
    try:
        base = BaselineFile.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read baseline {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, ValidationError) as exc:  # not UTF-8: a binary file given by mistake
        why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else why_invalid(exc)
        raise InputError(
            f"{path} is not a specbench baseline ({why}); "
            "create one with `specbench baseline save RUN_DIR --name NAME`"
        ) from exc
    samples, note = unique_samples(base.samples, str(path))
    notes = [note] if note else []
    return Side(ref=str(path), kind="baseline", facts=base.facts, samples=samples, notes=notes)


def baselines_dir() -> Path:
    return results_dir() / "baselines"


def load_side(ref: str | Path) -> Side:
    """A run folder, a baseline file, or the NAME of ``results/baselines/NAME.json``."""
    check_path(ref, "comparison side")
    path = Path(ref)
    if path.is_dir():
        return load_run(path)
    if path.is_file():
        return load_baseline_file(path)
    if _is_name(str(ref)) and (named := inside(baselines_dir(), f"{ref}.json")).is_file():
        return load_baseline_file(named)
    known = sorted(p.stem for p in baselines_dir().glob("*.json")) if baselines_dir().is_dir() else []
    hint = f"saved baselines: {', '.join(known)}" if known else f"no baselines saved in {baselines_dir()}"
    raise InputError(f"{ref}: not a run folder, a baseline file, or a baseline name ({hint})")


class SavedBaseline(BaseModel):
    path: Path
    notes: list[str] = []  # what reading the run left out (duplicates, a torn last line)


class ListedBaseline(BaseModel):
    name: str
    path: Path
    side: Side | None = None  # None: the file could not be read
    problem: str | None = None  # why, in one line


def list_baselines(folder: Path | None = None) -> list[ListedBaseline]:
    """Every ``*.json`` in ``folder``; an unreadable one is listed with its problem, hiding no other."""
    folder = folder or baselines_dir()
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            out.append(ListedBaseline(name=path.stem, path=path, side=load_baseline_file(path)))
        except InputError as exc:
            out.append(ListedBaseline(name=path.stem, path=path, problem=str(exc)))
    return out


def _is_name(text: str) -> bool:
    try:
        check_name(text)
    except PathError:
        return False
    return True


def baseline_name(text: str) -> str:
    """``--name``: a baseline's name (the file NAME.json). A NAME ending in ``.json`` is taken without
    it (compare finds ``NAME`` as ``NAME.json``); anything but a name is refused (exit 2)."""
    name = text[: -len(".json")] if text.endswith(".json") and len(text) > len(".json") else text
    if len(name) > MAX_NAME:
        raise InputError(f"--name {shorten(name)}: a baseline name is at most {MAX_NAME} characters")
    try:
        return check_name(name, "--name")
    except PathError as exc:
        raise InputError(f"{exc} (e.g. ci-rtx4090)") from None


def save_baseline(
    run_dir: Path, name: str, dest_dir: Path | None = None, force: bool = False
) -> SavedBaseline:
    """Write ``dest_dir/NAME.json`` (default ``results/baselines``) from a finished run."""
    name = baseline_name(name)
    for what, path in (("RUN_DIR", run_dir), ("--dir", dest_dir)):
        if path is not None:
            check_path(path, what)
    side = load_run(run_dir)
    if side.facts.status not in (None, "complete"):
        raise InputError(
            f"{run_dir} is {side.facts.status}, not complete, so it cannot be a baseline; "
            f"{finish_hint(run_dir, side.facts.status)}"
        )
    kept = [s for s in side.samples if s.role in ROLES_KEPT]
    if not any(s.valid and s.tps is not None for s in kept):
        raise InputError(
            f"{run_dir} has no valid baseline or speculative sample; nothing to save as a baseline"
        )
    dest = inside(dest_dir or baselines_dir(), f"{name}.json")
    if dest.exists() and not force:
        raise InputError(f"{dest} exists; pass --force to replace it (its history stays in git)")
    saved = BaselineFile(name=name, saved_at=now_iso(), source=str(run_dir), facts=side.facts, samples=[])
    header = saved.model_dump(mode="json", exclude={"samples"})
    header["facts"]["specbench_version"] = header["facts"]["specbench_version"] or __version__
    # One sample per line: a committed baseline should diff line by line.
    lines = [
        json_text(s.model_dump(mode="json", exclude=SAMPLE_FIELDS_DROPPED, exclude_none=True), None)
        for s in kept
    ]
    head = json_text(header)[:-2]  # drop the closing "\n}"
    text = head + ',\n  "samples": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n"
    try:
        write_atomic(dest, text)
    except OSError as exc:
        raise InputError(f"cannot write baseline {os_problem(exc, dest)} (--dir DIR: elsewhere)") from exc
    return SavedBaseline(path=dest, notes=side.notes)

"""The run folder's files: the one module that knows their names and where they are.

``results/<run-id>/`` holds ``manifest.json`` (rewritten atomically), ``samples.jsonl`` (fsynced per
sample, so a crash loses only the one in flight), ``raw/`` (every invocation's output), ``.lock``,
``calibration.json`` (tune) and, in a merged run, each shard's manifest under ``shards/<name>/``.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.base.errors import ParseError, RunError
from specbench.base.files import write_atomic
from specbench.base.paths import os_problem

if TYPE_CHECKING:
    from specbench.results.records import Sample

SAMPLES = "samples.jsonl"
MANIFEST = "manifest.json"
RAW = "raw"
LOCK = ".lock"
CALIBRATION = "calibration.json"
SHARDS = "shards"  # a merged run keeps each shard's manifest under shards/<name>/
REPORT = "report"  # `specbench report RUN` writes RUN/report/ by default
REPORT_PAGE = "report.html"  # the page in it
BISECT = "bisect.json"  # `specbench bisect --out OUT` keeps its state in OUT/bisect.json, beside its runs
PARTIAL = ".partial"  # appended to the raw logs of a sample that never finished
RAW_SUFFIXES = (".response.json", ".stdout", ".stderr", ".times")  # the raw files of one invocation


def make_run_id(name: str, when: datetime | None = None) -> str:
    """``YYYYmmdd-HHMMSS-<config name>`` (local time: it is what a person looks for in results/)."""
    return f"{(when or datetime.now()).strftime('%Y%m%d-%H%M%S')}-{name}"


def has_samples(run_dir: Path) -> bool:
    return (run_dir / SAMPLES).is_file()


def has_manifest(run_dir: Path) -> bool:
    return (run_dir / MANIFEST).is_file()


def manifest_path(run_dir: Path) -> Path:
    return run_dir / MANIFEST


def samples_path(run_dir: Path) -> Path:
    return run_dir / SAMPLES


def raw_paths(run_dir: Path, stem: str) -> tuple[Path, Path]:
    """stdout and stderr files of one invocation."""
    raw = run_dir / RAW
    return raw / f"{stem}.stdout", raw / f"{stem}.stderr"


def server_log_paths(run_dir: Path, stem: str) -> tuple[Path, Path]:
    """stdout and stderr of one llama-server process (it serves every request of its setting)."""
    return raw_paths(run_dir, f"{stem}-server")


def response_paths(run_dir: Path, stem: str) -> tuple[Path, Path]:
    """One server request: its generated text (``.stdout``, read as a process run's) and response."""
    raw = run_dir / RAW
    return raw / f"{stem}.stdout", raw / f"{stem}.response.json"


def resume_command(run_dir: Path, *more: str) -> str:
    """The command that continues a run, as a shell takes it (a folder with spaces is quoted)."""
    return shlex.join(["specbench", "run", "--resume", str(run_dir), *more])


def write_raw(path: Path, text: str) -> None:
    """A raw file of a sample; one that cannot be written is a RunError (the disk is full)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise RunError(
            f"cannot write {path}: {exc.strerror or exc}; earlier samples are intact, free space, then "
            f"`{resume_command(path.parent.parent)}`"
        ) from exc


def write_whole(path: Path, text: str, then: str = "free space or fix permissions") -> None:
    """A run folder's file written whole or not at all; one that cannot be is a RunError saying ``then``."""
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise RunError(f"cannot write {path}: {exc.strerror or exc}; {then}") from exc


def run_folders(base: Path) -> list[Path]:
    return [p for p in base.iterdir() if has_samples(p)] if base.is_dir() else []


def check_writable(run_dir: Path) -> None:
    """Create the folder and write a probe file: only a real write proves it (root ignores modes)."""
    if run_dir.exists() and not run_dir.is_dir():
        raise RunError(f"{run_dir} is a file, not a folder; pass a new or existing folder with --out DIR")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / f".write-test-{os.getpid()}"
        with open(probe, "w") as fh:
            fh.write("ok")
        probe.unlink()
    except OSError as exc:
        raise RunError(
            f"results folder is not writable: {os_problem(exc, run_dir)}; make it writable, or give a new "
            "run another folder with --out DIR"
        ) from exc


def prepare_raw(run_dir: Path) -> None:
    (run_dir / RAW).mkdir(exist_ok=True)


def raw_in_shard(path: str | None, name: str) -> str | None:
    """A sample's raw log path (``raw/...``, relative to its run) once its shard is kept under ``name``."""
    if path is None or not path.startswith(f"{RAW}/"):
        return path
    return f"{RAW}/{name}/{path[len(RAW) + 1 :]}"


_RAW_NUMBER = re.compile(r"(\d+)-")


def _raw_stem(name: str) -> str | None:
    return next((name[: -len(s)] for s in RAW_SUFFIXES if name.endswith(s)), None)


def next_raw_number(run_dir: Path) -> int:
    """Raw logs are named ``NNNN-...``; a resumed run numbers on after the highest, so no name is
    used twice (a repeated number would read as one invocation's logs)."""
    raw = run_dir / RAW
    names = [p.name for p in raw.iterdir()] if raw.is_dir() else []
    return max((int(m.group(1)) for n in names if (m := _RAW_NUMBER.match(n))), default=-1) + 1


def mark_partial(run_dir: Path, stems: Iterable[str], mark: str = PARTIAL) -> list[Path]:
    """Rename the raw logs of invocations cut short to ``NAME.partial``, so ``specbench parse
    raw/*.stderr`` does not read half a run as a whole one. ``mark``: another ending (``.rerun1``: a
    measurement set aside to be made again, ``machine.contention``)."""
    marked = []
    for stem in stems:
        for suffix in RAW_SUFFIXES:
            path = run_dir / RAW / f"{stem}{suffix}"
            if path.is_file():
                try:
                    path.replace(path.with_name(path.name + mark))
                    marked.append(path)
                except OSError:
                    pass  # a log left as it is must not hide why the run stopped
    return marked


def mark_orphans(run_dir: Path, samples: Iterable[Sample]) -> list[Path]:
    """On --resume: logs of measured invocations that left no sample (killed first) are partial; a
    warmup's (never recorded) only when it holds no timing lines. Server logs are kept as they are."""
    raw = run_dir / RAW
    if not raw.is_dir():
        return []
    recorded = {_raw_stem(Path(p).name) for s in samples for p in (s.stdout_path, s.stderr_path) if p}
    orphans = set()
    for path in raw.iterdir():
        stem = _raw_stem(path.name)
        if stem is None or stem in recorded or stem.endswith("-server"):
            continue
        if "-warmup-" in stem and (path.suffix != ".stderr" or _finished(path)):
            continue
        orphans.add(stem)
    return mark_partial(run_dir, sorted(orphans))


def _finished(stderr: Path) -> bool:
    """Whether a llama.cpp log got as far as its closing statistics."""
    from specbench.parse.process import parse_file

    try:
        parse_file(stderr)
    except ParseError:
        return False
    return True

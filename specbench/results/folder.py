"""The run folder's files: the one module that knows their names and where they are.

Layout of ``results/<run-id>/``: ``manifest.json`` (what was measured, on what; rewritten
atomically), ``samples.jsonl`` (one line per invocation, fsynced as it finishes, so a crash or
Ctrl-C loses only the sample in flight), ``raw/`` (every stdout and stderr; with the server
runner each server's log and each request's text and response JSON), ``.lock`` and, for runs
of ``specbench tune``, ``calibration.json`` (the measured pass costs behind ``model_speedup``);
a merged run keeps each shard's manifest under ``shards/<name>/``.

Reading and writing them is by topic: ``runlock`` (the lock), ``samplelog`` (the sample log),
``manifestfile`` (the manifest and its format version, and a whole folder as its readers see it),
``calibration`` (the calibration file), ``runstate`` (what a folder allows: resume, or not for tune).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from specbench.base.errors import RunError
from specbench.base.paths import os_problem

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
RAW_SUFFIXES = (".response.json", ".stdout", ".stderr")  # the raw files of one invocation


def make_run_id(name: str, when: datetime | None = None) -> str:
    """``YYYYmmdd-HHMMSS-<config name>`` (local time: it is what a person looks for in results/)."""
    return f"{(when or datetime.now()).strftime('%Y%m%d-%H%M%S')}-{name}"


def has_samples(run_dir: Path) -> bool:
    return (run_dir / SAMPLES).is_file()


def has_manifest(run_dir: Path) -> bool:
    return (run_dir / MANIFEST).is_file()


def manifest_path(run_dir: Path) -> Path:
    """Where a run's manifest is (for messages that name it)."""
    return run_dir / MANIFEST


def samples_path(run_dir: Path) -> Path:
    """Where a run's samples are (for messages that send a person there)."""
    return run_dir / SAMPLES


def raw_paths(run_dir: Path, stem: str) -> tuple[Path, Path]:
    """stdout and stderr files of one invocation."""
    raw = run_dir / RAW
    return raw / f"{stem}.stdout", raw / f"{stem}.stderr"


def server_log_paths(run_dir: Path, stem: str) -> tuple[Path, Path]:
    """stdout and stderr of one llama-server process (it serves every request of its setting)."""
    return raw_paths(run_dir, f"{stem}-server")


def response_paths(run_dir: Path, stem: str) -> tuple[Path, Path]:
    """One server request: its generated text (``.stdout``, read like a process run's on --resume)
    and the whole response (``.response.json``)."""
    raw = run_dir / RAW
    return raw / f"{stem}.stdout", raw / f"{stem}.response.json"


def write_raw(path: Path, text: str) -> None:
    """A raw file of a sample; one that cannot be written is a RunError (the disk is full)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise RunError(
            f"cannot write {path}: {exc.strerror or exc}; free space, then `specbench run CONFIG --resume "
            f"{path.parent.parent}`"
        ) from exc


def run_folders(base: Path) -> list[Path]:
    """The run folders directly under ``base``."""
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

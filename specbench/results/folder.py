"""The run folder: the one module that knows its files, their names and their formats.

Layout of ``results/<run-id>/``: ``manifest.json`` (what was measured, on what; rewritten
atomically), ``samples.jsonl`` (one line per invocation, fsynced as it finishes, so a crash or
Ctrl-C loses only the sample in flight), ``raw/`` (every stdout and stderr; with the server
runner each server's log and each request's text and response JSON), ``.lock`` and, for runs
of ``specbench tune``, ``calibration.json`` (the measured pass costs behind ``model_speedup``).

Two runs appending to one sample log would interleave their samples into nonsense, so a run
holds ``fcntl.flock`` on the lock file for as long as it runs; the kernel drops the lock when the
process dies, so a crashed run never leaves a stale lock behind.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from specbench import __version__
from specbench.base.errors import RunError
from specbench.base.files import write_atomic
from specbench.base.paths import os_problem
from specbench.results.calibration import Calibration
from specbench.results.manifest import FORMAT_VERSION, Manifest, RunFacts, facts_from_manifest
from specbench.results.rawlogs import PARTIAL, mark_orphans, mark_partial, next_raw_number  # noqa: F401
from specbench.results.records import Sample

SAMPLES = "samples.jsonl"
MANIFEST = "manifest.json"
RAW = "raw"
LOCK = ".lock"
CALIBRATION = "calibration.json"


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


def check_fresh(run_dir: Path) -> None:
    """A new run must not append to an old run's samples: that is what --resume is for."""
    if has_samples(run_dir):
        by = made_by(run_dir)
        resume = (
            f" (or continue that run with `specbench run --resume {run_dir}`)" if by in (None, "run") else ""
        )
        raise RunError(f"{run_dir} already holds a run; choose another --out{resume}")


def check_resumable(run_dir: Path) -> None:
    if not has_samples(run_dir) and not has_manifest(run_dir):
        raise RunError(f"{run_dir} is not a run folder to resume (no {SAMPLES} or {MANIFEST})")


def prepare_raw(run_dir: Path) -> None:
    (run_dir / RAW).mkdir(exist_ok=True)


class RunLock:
    """Held while a run writes to ``run_dir``; a second holder is refused with a RunError."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / LOCK
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise RunError(f"cannot create lock file {self.path}: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunError(
                    f"another specbench run is writing to {self.path.parent} (it holds {LOCK}); "
                    f"wait for it to finish or use another --out folder"
                ) from exc
            raise RunError(f"cannot lock {self.path}: {exc.strerror or exc}") from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_holder(run_dir: Path) -> int | None:
    """The pid of the run writing to ``run_dir`` now (0 when it cannot be read), or None when no
    process holds its lock. The lock, not the manifest, tells: a killed run leaves ``running``."""
    try:
        fd = os.open(run_dir / LOCK, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return None
            head = os.pread(fd, 32, 0).split()
            return int(head[0]) if head and head[0].isdigit() else 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def finish_hint(run_dir: Path, status: str | None) -> str:
    """What to do about an unfinished run: wait for a live one (the lock refuses a resume while it
    runs), resume one that stopped (not a tune folder: ``TUNE_NOT_RESUMED``)."""
    if status == "running":
        pid = lock_holder(run_dir)
        who = f"process {pid}" if pid else "a process"
        return f"it is still running ({who} holds {run_dir / LOCK}); wait for it to finish"
    if made_by(run_dir) == "tune":
        return f"it is a `specbench tune` folder, which is not resumed ({TUNE_NOT_RESUMED})"
    return f"`specbench run --resume {run_dir}` finishes it"


# A tune round pairs each setting's speedup with the baseline measured in the same minutes, and
# its later rounds are chosen from the earlier ones: `run --resume` would plan the last round's
# config afresh and pair new samples with old baselines.
TUNE_NOT_RESUMED = "each round is paired with its own baseline; run `specbench tune` again to measure more"


def made_by(run_dir: Path) -> str | None:
    """The specbench command that wrote the run folder (run, tune, ab, bisect, merge...), from its
    manifest's command line; None when that is not recorded."""
    try:
        line = _manifest_data(run_dir).get("command_line") or []
    except RunError:
        return None
    return str(line[1]) if len(line) > 1 else None


def check_not_tune(run_dir: Path) -> None:
    """``run --resume`` of a tune folder would corrupt it (``TUNE_NOT_RESUMED``): refused."""
    if made_by(run_dir) == "tune":
        raise RunError(
            f"{run_dir} was written by `specbench tune` and is not resumed as a run: {TUNE_NOT_RESUMED} "
            f"(`specbench report {run_dir}` shows what it measured)"
        )


# --- samples -------------------------------------------------------------------------------------


def append_sample(run_dir: Path, sample: Sample) -> None:
    """Append one line and make it durable before returning."""
    line = (sample.model_dump_json() + "\n").encode("utf-8")
    path = run_dir / SAMPLES
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = _cut_torn_tail(fd)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            except OSError:
                _truncate(fd, size)  # a torn line would make the next sample unreadable on --resume
                raise
        finally:
            os.close(fd)
    except OSError as exc:
        raise RunError(
            f"cannot write {path}: {exc.strerror or exc}; earlier samples are intact, "
            f"free space or fix permissions, then `specbench run --resume {run_dir}`"
        ) from exc


def _cut_torn_tail(fd: int) -> int:
    """A crash mid-write leaves a line without its newline; appending onto it would glue the next
    sample to the fragment and make both unreadable, so the fragment is cut off (the reader already
    ignores it, so its invocation runs again on --resume). Returns the size to append at."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    end = size
    while end > 0:
        start = max(0, end - (64 << 10))
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        if newline >= 0:
            end = start + newline + 1
            break
        end = start
    os.ftruncate(fd, end)
    return end


def _truncate(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
    except OSError:
        pass


def unique_samples(samples: list[Sample], where: str) -> tuple[list[Sample], str | None]:
    """A sample's identity (cell, prompt, repetition, role: ``sample_key``) is unique in a run; a
    repeated one (a line copied twice, a hand-merged log) would count twice in every mean and n.
    The first of each is kept; the note says how many were dropped, for the reader to print."""
    seen: dict[tuple, int] = {}
    kept, dropped = [], []
    for i, s in enumerate(samples, 1):
        key = s.sample_key()
        if key in seen:
            dropped.append((i, seen[key]))
            continue
        seen[key] = i
        kept.append(s)
    if not dropped:
        return samples, None
    i, first = dropped[0]
    return kept, (
        f"{where}: {len(dropped)} duplicate {'sample was' if len(dropped) == 1 else 'samples were'} dropped "
        f"(sample {i} repeats sample {first}: the same cell, prompt, repetition and role); each counts once"
    )


def load_samples(run_dir: Path, warnings: list[str] | None = None) -> list[Sample]:
    """All complete samples of a run, each identity once (``unique_samples``); none for a run with
    a manifest that has not recorded one yet (it stopped, or is still warming up). A torn last line
    (crash mid-write) is left out; both are said in ``warnings`` when given. A bad line anywhere
    else is an error naming the field and why."""
    path = run_dir / SAMPLES
    if not path.is_file():
        if has_manifest(run_dir):  # started, but stopped (or still busy) before its first sample
            return []
        raise RunError(
            f"{run_dir} is not a specbench run folder (no {SAMPLES}); pass a folder under results/"
        )
    samples = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    last = max((i for i, line in enumerate(lines, 1) if line.strip()), default=0)
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            samples.append(Sample.model_validate_json(line))
        except ValidationError as exc:
            if lineno == last:  # torn final line from an interrupted write
                if warnings is not None:
                    warnings.append(
                        f"{path}:{lineno}: an incomplete last line ({len(line)} characters, a write cut "
                        f"short) was left out; `specbench run --resume {run_dir}` measures it again"
                    )
                break
            raise RunError(f"{path}:{lineno}: not a valid sample ({why_invalid(exc)})") from exc
    samples, note = unique_samples(samples, str(path))
    if note and warnings is not None:
        warnings.append(note)
    return samples


def why_invalid(exc: ValidationError) -> str:
    """pydantic's first error as ``field: reason`` (plus how many more)."""
    errors = exc.errors()
    first = errors[0]
    loc = ".".join(str(p) for p in first["loc"])
    text = f"{loc}: {first['msg']}" if loc else first["msg"]
    return text + (f"; and {len(errors) - 1} more" if len(errors) > 1 else "")


# --- manifest ------------------------------------------------------------------------------------


def save_manifest(run_dir: Path, manifest: Manifest) -> None:
    """Write atomically: the old manifest stays whole until the new one is complete."""
    path = run_dir / MANIFEST
    try:
        write_atomic(path, manifest.model_dump_json(indent=2))
    except OSError as exc:
        raise RunError(
            f"cannot write {path}: {exc.strerror or exc}; free space or fix permissions "
            f"(samples already in {run_dir} are intact)"
        ) from exc


def load_manifest(run_dir: Path) -> Manifest:
    """The strict manifest, for --resume (which must rebuild exactly what was run)."""
    data = _manifest_data(run_dir)
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:  # the field and why, not pydantic's "1 validation error for Manifest"
        raise RunError(
            f"{run_dir / MANIFEST} is not a valid manifest ({why_invalid(exc)}); {_MANIFEST_FIX}"
        ) from exc


_MANIFEST_FIX = "restore it from a copy; a run cannot be resumed without its manifest"


def _manifest_data(run_dir: Path) -> dict:
    path = run_dir / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RunError(f"{run_dir} has no {MANIFEST}; is it a specbench run folder?") from exc
    except ValueError as exc:
        raise RunError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise RunError(f"{path} is not a JSON object; is it a specbench run folder?")
    _check_format(data, path)
    return data


def _check_format(data: dict, path: Path) -> None:
    """Refuse a folder from a newer specbench rather than misread it; older ones load as they are."""
    found = data.get("format_version", 0)
    if isinstance(found, bool) or not isinstance(found, int):
        raise RunError(f"{path} is not a valid manifest: format_version {found!r} is not a whole number")
    if found > FORMAT_VERSION:
        writer = data.get("specbench_version")
        raise RunError(
            f"{path.parent} is run folder format {found} (written by specbench {writer or 'unknown'}); "
            f"this specbench {__version__} reads formats up to {FORMAT_VERSION}: upgrade specbench to read it"
        )


def read_facts(run_dir: Path, samples: list[Sample] | None = None, required: bool = True) -> RunFacts:
    """The facts of a run's manifest, tolerant of older and hand-made ones; without a manifest
    (``required=False``) only the run id is known."""
    fallback = samples[0].run_id if samples else run_dir.name
    running = lock_holder(run_dir) is not None
    if not required and not has_manifest(run_dir):
        return RunFacts(run_id=fallback, status="running" if running else None)
    facts = facts_from_manifest(_manifest_data(run_dir), fallback)
    if running:
        facts.status = "running"
    elif facts.status == "running":  # nobody holds the lock: the run's process died mid-run
        facts.status = "interrupted"
        facts.status_reason = "its process ended without recording how (killed, or the machine stopped)"
    return facts


# --- calibration --------------------------------------------------------------------------------


def save_calibration(run_dir: Path, calibration: Calibration) -> None:
    """Write atomically, like the manifest."""
    path = run_dir / CALIBRATION
    try:
        write_atomic(path, calibration.model_dump_json(indent=2))
    except OSError as exc:
        raise RunError(f"cannot write {path}: {exc.strerror or exc}; free space or fix permissions") from exc


def load_calibration(run_dir: Path) -> Calibration | None:
    """The run's calibration, or None when it has none (a plain `specbench run`) or it is unreadable."""
    path = run_dir / CALIBRATION
    try:
        return Calibration.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# --- the whole folder ----------------------------------------------------------------------------


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


# --- merged shards -------------------------------------------------------------------------------

SHARDS = "shards"  # a merged run keeps each shard's manifest under shards/<name>/


def write_samples(run_dir: Path, samples: Iterable[Sample]) -> None:
    """A whole sample log at once (``specbench merge``): complete or not there at all."""
    path = run_dir / SAMPLES
    try:
        write_atomic(path, "".join(s.model_dump_json() + "\n" for s in samples))
    except OSError as exc:
        raise RunError(f"cannot write {path}: {os_problem(exc)}; free space or fix permissions") from exc


def keep_shard(src: Path, dst: Path, name: str) -> None:
    """Keep a shard's manifest and raw logs in a merged run: the manifest under ``shards/<name>/``,
    the logs under ``raw/<name>/`` (hard links where the file system allows, copies elsewhere)."""
    import shutil

    try:
        (dst / SHARDS / name).mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / MANIFEST, dst / SHARDS / name / MANIFEST)
        if (src / RAW).is_dir():
            target = dst / RAW / name
            target.mkdir(parents=True, exist_ok=True)
            for f in (src / RAW).iterdir():
                if f.is_file():
                    try:
                        os.link(f, target / f.name)
                    except OSError:
                        shutil.copy2(f, target / f.name)
    except OSError as exc:
        raise RunError(f"cannot copy {src} into {dst}: {os_problem(exc)}") from exc


def raw_in_shard(path: str | None, name: str) -> str | None:
    """A sample's raw log path (``raw/...``, relative to its run) once its shard is kept under ``name``."""
    if path is None or not path.startswith(f"{RAW}/"):
        return path
    return f"{RAW}/{name}/{path[len(RAW) + 1 :]}"

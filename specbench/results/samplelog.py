"""The sample log (``samples.jsonl``): appended durably, one line per invocation, and read back
with a torn last line (a crash mid-write) left out or cut off before the next append.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from pydantic import ValidationError

from specbench.base.errors import RunError, UnreadableRun
from specbench.base.files import write_atomic
from specbench.base.formats import json_line
from specbench.base.paths import os_problem
from specbench.results.folder import SAMPLES, has_manifest, resume_command
from specbench.results.records import Sample, impossible


def append_sample(run_dir: Path, sample: Sample) -> None:
    """Append one line and make it durable before returning."""
    line = (json_line(sample) + "\n").encode("utf-8")
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
                with suppress(OSError):  # a torn line would make the next sample unreadable on --resume
                    os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)
    except OSError as exc:
        raise RunError(
            f"cannot write {path}: {exc.strerror or exc}; earlier samples are intact, "
            f"free space or fix permissions, then `{resume_command(run_dir)}`"
        ) from exc


def _cut_torn_tail(fd: int) -> int:
    """Cut off a line a crash left without its newline (appended onto, both lines would be lost; its
    invocation runs again on --resume). Returns the size to append at."""
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


def write_samples(run_dir: Path, samples: Iterable[Sample]) -> None:
    """A whole sample log at once (``specbench merge``): complete or not there at all."""
    path = run_dir / SAMPLES
    try:
        write_atomic(path, "".join(json_line(s) + "\n" for s in samples))
    except OSError as exc:
        raise RunError(f"cannot write {path}: {os_problem(exc)}; free space or fix permissions") from exc


def unique_samples(samples: list[Sample], where: str) -> tuple[list[Sample], str | None]:
    """The first sample of each identity (``sample_key``), so a line copied twice does not count
    twice in every mean; and a note of how many were dropped."""
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
    """All complete samples of a run, each identity once; none for a run with a manifest and no
    sample yet. A torn last line is left out (said in ``warnings``); a bad line elsewhere is an error."""
    path = run_dir / SAMPLES
    if not path.is_file():
        if has_manifest(run_dir):  # started, but stopped (or still busy) before its first sample
            return []
        raise UnreadableRun(
            f"{run_dir} is not a specbench run folder (no {SAMPLES}); pass a folder under results/"
        )
    samples = []
    impossibles: list[tuple[int, str]] = []  # (line, why) of the samples no run can have measured
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    last = max((i for i, line in enumerate(lines, 1) if line.strip()), default=0)
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            samples.append(_screened(Sample.model_validate_json(line), lineno, impossibles))
        except ValidationError as exc:
            if lineno == last:  # torn final line from an interrupted write
                if warnings is not None:
                    warnings.append(
                        f"{path}:{lineno}: an incomplete last line ({len(line)} characters, a write cut "
                        f"short) was left out; `{resume_command(run_dir)}` measures it again"
                    )
                break
            raise UnreadableRun(f"{path}:{lineno}: not a valid sample ({why_invalid(exc)})") from exc
    if impossibles and warnings is not None:  # one note however many: the first named, the rest counted
        (lineno, why), more = impossibles[0], len(impossibles) - 1
        warnings.append(
            f"{path}:{lineno}: impossible numbers ({why}): counted as an invalid sample"
            + (f"; and {more} more such sample{'s' * (more > 1)}" if more else "")
        )
    samples, note = unique_samples(samples, str(path))
    if note and warnings is not None:
        warnings.append(note)
    return samples


def _screened(sample: Sample, lineno: int, impossibles: list[tuple[int, str]]) -> Sample:
    """``sample``, made invalid (with the reason, noted in ``impossibles``) and its non-finite figures
    cleared when no run can have measured its numbers."""
    why, clear = impossible(sample)
    if why is None:
        return sample
    update = {**clear, "valid": False}
    if sample.valid:
        update.update(
            status="invalid" if sample.status == "ok" else sample.status,
            invalid_reason=f"impossible numbers in the sample log: {why}",
        )
    impossibles.append((lineno, why))
    return sample.model_copy(update=update)


def why_invalid(exc: ValidationError) -> str:
    """pydantic's first error as ``field: reason`` (plus how many more)."""
    errors = exc.errors()
    first = errors[0]
    loc = ".".join(str(p) for p in first["loc"])
    text = f"{loc}: {first['msg']}" if loc else first["msg"]
    return text + (f"; and {len(errors) - 1} more" if len(errors) > 1 else "")

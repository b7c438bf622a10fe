"""Raw logs of a run folder (``raw/``): names that stay unique across --resume, and the logs of an
invocation cut short marked ``.partial``. Part of the run-folder layer (``results.folder`` names the
folder); nothing outside ``specbench.results`` touches the files."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from specbench.results.folder import PARTIAL, RAW, RAW_SUFFIXES
from specbench.results.records import Sample

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
    """Rename the raw logs of invocations cut short (Ctrl-C, a kill) to ``NAME.partial``: they hold
    half a run, and ``specbench parse raw/*.stderr`` must not read them as whole ones. ``mark``:
    another ending (``.rerun1``: a measurement set aside to be made again, ``machine.contention``)."""
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
    """On --resume: logs of measured invocations that left no sample (the process was killed before
    it could record one) are partial. A warmup is never recorded, so its log is partial when it
    holds no timing lines (llama.cpp prints them as it exits). Server logs are kept as they are."""
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
    from specbench.base.errors import ParseError
    from specbench.parse.process import parse_file

    try:
        parse_file(stderr)
    except ParseError:
        return False
    return True

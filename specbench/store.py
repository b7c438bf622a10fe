"""The results store: one run folder, appended to one sample at a time.

Layout of ``results/<run-id>/``: ``manifest.json`` (what was measured, on what), ``samples.jsonl``
(one line per invocation, flushed and fsynced as it finishes, so a crash or Ctrl-C loses only the
sample in flight), ``raw/`` (every stdout and stderr). Report and compare read only this.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from specbench.errors import RunError
from specbench.parse import ParsedLog

SAMPLES = "samples.jsonl"
MANIFEST = "manifest.json"


class Generation(BaseModel):
    """Generation settings shared by every invocation of a run (part of what defines a cell)."""

    n_predict: int = 128
    temperature: float = 0.0
    top_k: int | None = None
    seed: int = 42
    threads: int | None = None
    ctx_size: int = 2048


class Measurement(BaseModel):
    """What one invocation measures: the identity a planned Invocation and its stored Sample share.

    role: ``baseline`` (target alone, llama-completion), ``draft`` (draft model alone, to measure
    the cost ratio) or ``speculative``. Baseline and draft samples have method ``none`` and no
    draft settings; a speculative cell's baseline is the baseline sample with the same target,
    prompt, ``ngl`` and repetition.
    """

    role: str  # baseline | draft | speculative
    pair: str | None = None  # None for baseline/draft samples (shared across pairs)
    model: str  # the model that ran alone (baseline/draft), or the target (speculative)
    draft: str | None = None  # draft model name (speculative with method "draft")
    method: str = "none"  # none | draft | ngram-simple | ngram-map-k | ...
    draft_max: int | None = None
    draft_min: int | None = None
    p_min: float | None = None
    ngl: int | None = None  # GPU layers of `model`
    ngld: int | None = None  # GPU layers of the draft model
    prompt_id: str
    category: str
    repetition: int  # 0-based; warmups are never stored
    generation: Generation

    def sample_key(self) -> tuple:
        """Identity of the invocation within a run: used by --resume to skip finished samples."""
        return (
            self.role, self.pair, self.model, self.draft, self.method, self.draft_max, self.draft_min,
            self.p_min, self.ngl, self.ngld, self.prompt_id, self.repetition,
        )  # fmt: skip


class Sample(Measurement):
    """One finished invocation of a llama.cpp binary: one line of samples.jsonl."""

    run_id: str
    status: str  # ok | failed | timeout | invalid
    valid: bool
    invalid_reason: str | None = None
    metrics: ParsedLog | None = None
    tps: float | None = None  # decode t/s: `decoded` line (speculative) or target eval t/s
    acceptance: float | None = None  # n_accept / n_drafted
    tokens_per_pass: float | None = None  # n_predict / (n_predict - n_accept)
    n_generated: int | None = None
    outputs_match: bool | None = None  # vs the baseline continuation (temperature 0 only)
    first_diff: int | None = None  # first differing character of the continuation
    output_sha256: str | None = None
    exit_code: int | None = None
    wall_s: float
    cmd: list[str] = Field(default_factory=list)
    stdout_path: str | None = None  # relative to the run folder
    stderr_path: str | None = None
    started_at: str


def append_sample(run_dir: Path, sample: Sample) -> None:
    """Append one line and make it durable before returning."""
    line = (sample.model_dump_json() + "\n").encode("utf-8")
    path = run_dir / SAMPLES
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
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
            f"free space or fix permissions, then `specbench run CONFIG --resume {run_dir}`"
        ) from exc


def _truncate(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
    except OSError:
        pass


def load_samples(run_dir: Path) -> list[Sample]:
    """All complete samples of a run; a torn last line (crash mid-write) is ignored."""
    path = run_dir / SAMPLES
    if not path.is_file():
        raise RunError(
            f"{run_dir} is not a specbench run folder (no {SAMPLES}); pass a folder under results/"
        )
    samples = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            samples.append(Sample.model_validate_json(line))
        except ValidationError as exc:
            if lineno == len(lines):
                break  # torn final line from an interrupted write
            raise RunError(f"{path}:{lineno}: not a valid sample ({exc.error_count()} errors)") from exc
    return samples


def load_manifest(run_dir: Path) -> dict:
    path = run_dir / MANIFEST
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RunError(f"{run_dir} has no {MANIFEST}; is it a specbench run folder?") from exc
    except ValueError as exc:
        raise RunError(f"{path} is not valid JSON: {exc}") from exc


def manifest_value(manifest: object, *keys: str) -> Any:
    """A nested value of a loaded manifest, or None where a level is missing (older runs lack parts)."""
    for key in keys:
        if not isinstance(manifest, dict):
            return None
        manifest = manifest.get(key)
    return manifest

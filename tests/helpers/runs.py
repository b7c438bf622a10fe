"""Run folders written with the store's own types, with the t/s a test states."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from specbench.results.records import Generation, Sample
from specbench.results.samplelog import append_sample

TARGET_SHA = "a" * 64


def run_count(db: Path) -> int:
    """How many runs a history database holds (0: no database file)."""
    if not db.is_file():
        return 0
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


DRAFT_SHA = "b" * 64


def manifest(
    run_id: str,
    cpu: str = "Test CPU 2-core",
    gpus=(),
    commit: str = "c0ffee",
    models=None,
    format_version=None,
) -> dict:
    models = models or {"smol-f32": TARGET_SHA, "smol-q4": DRAFT_SHA}
    return {
        **({"format_version": format_version} if format_version is not None else {}),
        "run_id": run_id,
        "started_at": f"2026-01-01T00:00:0{run_id[-1]}+00:00",
        "models": {n: {"name": n, "sha256": sha, "path": f"/m/{n}.gguf"} for n, sha in models.items()},
        "env": {"os": "Linux", "cpu_model": cpu, "backend": "cpu",
                "gpus": [{"name": g, "driver": "550.1"} for g in gpus]},
        "build": {"commit": commit, "backend": "cpu"},
    }  # fmt: skip


def make_run(
    root: Path,
    run_id: str,
    base_tps: list[float],
    spec_tps: dict[int, list[float]],
    prompts=("p1",),
    threads: int = 2,
    acceptance: float = 0.8,
    n_predict: int = 48,
    status: str = "ok",
    runner: str = "process",
    parallel: int = 1,
    **manifest_kw,
) -> Path:
    """A run folder: per prompt and repetition one baseline sample and one speculative sample per
    draft_max, with the given t/s (the same list for every prompt, scaled by prompt index)."""
    run_dir = root / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text(json.dumps(manifest(run_id, **manifest_kw)))
    gen = Generation(n_predict=n_predict, threads=threads)
    common = dict(
        run_id=run_id, category="chat", generation=gen, wall_s=1.0, started_at="2026-01-01T00:00:00",
        runner=runner, parallel=parallel,
    )  # fmt: skip
    for pi, prompt in enumerate(prompts):
        scale = 1.0 + 0.1 * pi
        for rep, tps in enumerate(base_tps):
            append_sample(run_dir, Sample(role="baseline", model="smol-f32", prompt_id=prompt, repetition=rep,
                                          status="ok", valid=True, tps=tps * scale, **common))  # fmt: skip
        for dmax, values in spec_tps.items():
            for rep, tps in enumerate(values):
                ok = status == "ok"
                append_sample(run_dir, Sample(
                    role="speculative", pair="smol", model="smol-f32", draft="smol-q4", method="draft",
                    draft_max=dmax, prompt_id=prompt, repetition=rep, status=status, valid=ok,
                    tps=tps * scale if ok else None, acceptance=acceptance if ok else None, **common,
                ))  # fmt: skip
    return run_dir


BASE = [30.0, 30.3, 29.8]


SPEC = {4: [45.0, 44.6, 45.3], 8: [50.0, 50.4, 49.7]}


def with_speed(run, moved: float, warned: bool):
    """The run's manifest as the speed sentinel leaves it (specbench.machine.speed)."""
    manifest = json.loads((run / "manifest.json").read_text())
    text = f"machine speed moved by {moved:+.0%} during the run (from 40.0 to 30.0 t/s)"
    warnings = [text] if warned else []
    manifest["noise"] = {"speed": {"moved": moved, "precision": 0.03, "warnings": warnings}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run

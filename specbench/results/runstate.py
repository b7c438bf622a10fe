"""What a run folder allows: a new run only in a fresh folder, a resume only of one tune did not write."""

from __future__ import annotations

from pathlib import Path

from specbench.base.errors import InputError, RunError, UnreadableRun
from specbench.results.folder import LOCK, MANIFEST, SAMPLES, has_manifest, has_samples, resume_command
from specbench.results.manifestfile import manifest_data
from specbench.results.runlock import lock_holder


def check_fresh(run_dir: Path) -> None:
    """A new run must not append to an old run's samples (--resume does, once that run has stopped)."""
    pid = lock_holder(run_dir)
    if pid is not None:
        raise RunError(
            f"{run_dir} holds a run that is {_still_running(run_dir, pid)}; wait for it to finish "
            f"or choose another --out"
        )
    if has_samples(run_dir):
        by = made_by(run_dir)
        resume = f" (or continue that run with `{resume_command(run_dir)}`)" if by in (None, "run") else ""
        raise InputError(f"{run_dir} already holds a run; choose another --out{resume}")


def check_resumable(run_dir: Path) -> None:
    if not has_samples(run_dir) and not has_manifest(run_dir):
        raise UnreadableRun(f"{run_dir} is not a run folder to resume (no {SAMPLES} or {MANIFEST})")


def finish_hint(run_dir: Path, status: str | None) -> str:
    """What to do about an unfinished run: wait for a live one, resume one that stopped (not tune's)."""
    pid = lock_holder(run_dir) if status == "running" else None
    if pid is not None:
        return f"it is {_still_running(run_dir, pid)}; wait for it to finish"
    if made_by(run_dir) == "tune":
        return f"it is a `specbench tune` folder, which is not resumed ({TUNE_NOT_RESUMED})"
    return f"`{resume_command(run_dir)}` finishes it"


def _still_running(run_dir: Path, pid: int | None) -> str:
    who = f"process {pid}" if pid else "a process"
    return f"still running ({who} holds {run_dir / LOCK})"


# `run --resume` of a tune folder would plan its last round afresh and pair new samples with old baselines.
TUNE_NOT_RESUMED = "each round is paired with its own baseline; run `specbench tune` again to measure more"


def made_by(run_dir: Path) -> str | None:
    """The specbench command that wrote the run folder (run, tune, ab...); None when not recorded."""
    try:
        line = manifest_data(run_dir).get("command_line") or []
    except RunError:
        return None
    return str(line[1]) if len(line) > 1 else None


def check_not_tune(run_dir: Path) -> None:
    if made_by(run_dir) == "tune":
        raise InputError(
            f"{run_dir} was written by `specbench tune` and is not resumed as a run: {TUNE_NOT_RESUMED} "
            f"(`specbench report {run_dir}` shows what it measured)"
        )

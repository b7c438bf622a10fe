"""The calibration file (``calibration.json``) of a ``specbench tune`` run: written atomically, like
the manifest; a run without one (a plain ``specbench run``) reads as None."""

from __future__ import annotations

from pathlib import Path

from specbench.base.errors import RunError
from specbench.base.files import write_atomic
from specbench.base.formats import json_text
from specbench.results.calibration import Calibration
from specbench.results.folder import CALIBRATION


def save_calibration(run_dir: Path, calibration: Calibration) -> None:
    """Write atomically, like the manifest."""
    path = run_dir / CALIBRATION
    try:
        write_atomic(path, json_text(calibration, ensure_ascii=False))
    except OSError as exc:
        raise RunError(f"cannot write {path}: {exc.strerror or exc}; free space or fix permissions") from exc


def load_calibration(run_dir: Path) -> Calibration | None:
    """The run's calibration, or None when it has none (a plain `specbench run`) or it is unreadable."""
    path = run_dir / CALIBRATION
    try:
        return Calibration.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None

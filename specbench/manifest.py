"""manifest.json: what a run measured and on what, so its numbers can be trusted and reproduced.

Written when the run starts (status ``running``) and rewritten when it ends (``complete``,
``interrupted`` or ``failed``), atomically (temp file + rename) so a crash never leaves half a file.
Holds no secrets: the config is data (no environment), and the command line is the one typed.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from specbench import __version__
from specbench.buildinfo import BuildInfo
from specbench.envinfo import EnvInfo
from specbench.errors import RunError
from specbench.models.paircheck import PairCheck
from specbench.models.spec import ResolvedModel
from specbench.store import MANIFEST

Status = Literal["running", "complete", "interrupted", "failed"]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Manifest(BaseModel):
    run_id: str
    name: str
    specbench_version: str = __version__
    started_at: str = Field(default_factory=now_iso)
    finished_at: str | None = None
    status: Status = "running"
    status_reason: str | None = None  # why a run failed (the one-line error)
    config_path: str | None = None
    config: dict[str, Any]  # the resolved config, as data
    build: BuildInfo
    env: EnvInfo
    models: dict[str, ResolvedModel]
    pair_checks: dict[str, PairCheck] = Field(default_factory=dict)  # by pair name (draft pairs)
    plan_size: int = 0  # invocations in the plan, warmups included
    n_samples_planned: int = 0  # recorded samples the plan will produce (warmups excluded)
    resumed_at: list[str] = Field(default_factory=list)  # one entry per --resume
    command_line: list[str] = Field(default_factory=list)

    def save(self, run_dir: Path) -> None:
        """Write atomically: the old manifest stays whole until the new one is complete."""
        path = run_dir / MANIFEST
        tmp = path.with_name(f".{MANIFEST}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(self.model_dump_json(indent=2))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise RunError(
                f"cannot write {path}: {exc.strerror or exc}; free space or fix permissions "
                f"(samples already in {run_dir} are intact)"
            ) from exc

    @classmethod
    def load(cls, run_dir: Path) -> Manifest:
        path = run_dir / MANIFEST
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise RunError(f"{run_dir} has no {MANIFEST}; is it a specbench run folder?") from exc
        except (OSError, ValueError) as exc:
            raise RunError(f"{path} is not a valid manifest: {str(exc).splitlines()[0]}") from exc

    def finish(self, run_dir: Path, status: Status, reason: str | None = None) -> None:
        self.status = status
        self.status_reason = reason
        self.finished_at = now_iso()
        self.save(run_dir)

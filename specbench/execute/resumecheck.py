"""What a resumed run must match: the config, the machine and the shard it was begun with,
checked before anything is built or fetched and again by ``run_benchmark``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from specbench.base.errors import RunError
from specbench.results.folder import has_manifest
from specbench.results.manifest import Manifest, machine_differences
from specbench.results.manifestfile import load_manifest

if TYPE_CHECKING:
    from specbench.plan.config import Config
    from specbench.plan.shards import Shard


def resumed_shard(run_dir: Path) -> Shard | None:
    """The shard a run folder measures (``--resume`` goes on with the same part of the plan)."""
    from specbench.plan.shards import Shard, parse_shard

    manifest = load_manifest(run_dir) if has_manifest(run_dir) else None
    if manifest is None or not manifest.shard:
        return None
    shard = parse_shard(manifest.shard)
    return Shard(shard.index, shard.count, tuple(manifest.shard_cells) if manifest.shard_cells else None)


def check_resume_machine(run_dir: Path, force: bool) -> None:
    """``--resume`` on another machine is refused before anything is built or fetched (unless
    ``force``); run_benchmark checks again and records a forced resume."""
    if not force and has_manifest(run_dir):
        check_same_machine(load_manifest(run_dir), run_dir, force)


def check_resume_config(run_dir: Path, config: Config) -> None:
    """``--resume`` (or ``ab --out`` an existing folder) with another config is refused before
    anything is built; run_benchmark checks again."""
    if has_manifest(run_dir):
        check_same_config(load_manifest(run_dir), config, run_dir)


def check_same_machine(manifest: Manifest, run_dir: Path, force: bool) -> None:
    """Resuming on another machine would mix two machines' numbers in one run: refused, or with
    ``force`` recorded in the manifest (the report then warns)."""
    from specbench.builder.toolkit import detect_backend
    from specbench.machine.envinfo import collect

    differ = machine_differences(manifest.env, collect(detect_backend))
    if not differ:
        return
    if not force:
        raise RunError(
            f"{run_dir} was made on another machine ({'; '.join(differ)}): resuming here would mix "
            "two machines' numbers in one run; resume it there, start a new run, or continue anyway "
            f"with `specbench run --resume {run_dir} --force`"
        )
    manifest.other_machines.append("; ".join(differ))


def check_same_config(manifest: Manifest, config: Config, run_dir: Path) -> None:
    """Resuming with another config would mix two experiments in one run folder."""
    from pydantic import ValidationError

    from specbench.base.redact import redact_data
    from specbench.plan.config import Config

    now = redact_data(config.model_dump(mode="json"))  # as the manifest recorded it
    try:  # keys added since the run was made (their defaults) must not count as a difference
        then = Config.model_validate(manifest.config).model_dump(mode="json")
    except ValidationError:
        then = manifest.config
    differ = sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k))
    if differ:
        raise RunError(
            f"{run_dir} was run with a different config ({', '.join(differ)} differ); resume it without "
            f"CONFIG and --set (`specbench run --resume {run_dir}` takes the config from its manifest)"
        )

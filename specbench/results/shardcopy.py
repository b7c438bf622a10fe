"""A merged run keeps each shard's manifest and raw logs (``specbench merge``)."""

from __future__ import annotations

import os
from pathlib import Path

from specbench.base.errors import RunError
from specbench.base.paths import inside, os_problem
from specbench.results.folder import MANIFEST, RAW, SHARDS


def keep_shard(src: Path, dst: Path, name: str) -> None:
    """Keep a shard's manifest and raw logs in a merged run: the manifest under ``shards/<name>/``,
    the logs under ``raw/<name>/`` (hard links where the file system allows, copies elsewhere)."""
    import shutil

    kept, target = inside(dst, SHARDS, name), inside(dst, RAW, name)
    try:
        kept.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / MANIFEST, kept / MANIFEST)
        if (src / RAW).is_dir():
            target.mkdir(parents=True, exist_ok=True)
            for f in (src / RAW).iterdir():
                if f.is_file():
                    try:
                        os.link(f, target / f.name)
                    except OSError:
                        shutil.copy2(f, target / f.name)
    except OSError as exc:
        raise RunError(f"cannot copy {src} into {dst}: {os_problem(exc)}") from exc

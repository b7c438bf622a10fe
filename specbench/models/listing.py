"""What the model cache holds (``specbench models list``)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from specbench.base.errors import ModelError
from specbench.models import cache
from specbench.models.gguffile import split_name
from specbench.models.meta import GGUFMeta, read_metadata


class CachedModel(BaseModel):
    """One cached GGUF model (a split set is listed once, by its first shard)."""

    kind: str  # hf | pypi | derived
    path: Path
    source: str  # repo@commit, package==version, or "SOURCE_SHA -> QUANT"
    size_bytes: int
    metadata: GGUFMeta | None = None
    error: str | None = None  # why the metadata could not be read


def _entry(kind: str, path: Path, source: str) -> CachedModel:
    try:
        meta = read_metadata(path)
        return CachedModel(kind=kind, path=path, source=source, size_bytes=meta.size_bytes, metadata=meta)
    except ModelError as exc:
        size = path.stat().st_size if path.exists() else 0
        return CachedModel(kind=kind, path=path, source=source, size_bytes=size, error=str(exc))


def _recorded(kind: str, folder: Path) -> list[CachedModel]:
    out = []
    for record_path in sorted(folder.glob(f"*/{cache.SOURCE_JSON}")):
        try:
            record = json.loads(record_path.read_text())
        except (OSError, ValueError):
            continue
        if kind == "pypi":
            path = record_path.parent / record.get("filename", "")
            reqs = record.get("requirements", [])
            source = (reqs[0] if reqs else "?") + (f" (+{len(reqs) - 1} chunks)" if len(reqs) > 1 else "")
        else:
            path = next(iter(sorted(record_path.parent.glob("*.gguf"))), record_path.parent / "missing.gguf")
            source = f"{Path(record.get('source', '?')).name} -> {record.get('quant', '?')}"
        if path.is_file():
            out.append(_entry(kind, path, source))
    return out


def _hf_models() -> list[CachedModel]:
    out = []
    root = cache.hf_cache_dir()
    for repo_dir in sorted(root.glob("models--*")):
        repo = repo_dir.name.removeprefix("models--").replace("--", "/")
        for snapshot in sorted((repo_dir / "snapshots").glob("*")):
            for path in sorted(snapshot.rglob("*.gguf")):
                info = split_name(path.name)
                if info is not None and info[1] != 1:
                    continue
                if path.exists():  # a dangling link is a removed blob
                    out.append(_entry("hf", path, f"{repo}@{snapshot.name[:12]}"))
    return out


def list_cached() -> list[CachedModel]:
    """Every GGUF model in the cache, with metadata."""
    root = cache.models_dir()
    return _hf_models() + _recorded("pypi", root / "pypi") + _recorded("derived", root / "derived")

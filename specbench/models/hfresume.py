"""Hub downloads that survive the process: a transfer cut off in one run resumes in the next.

huggingface_hub deletes its temporary file when a transfer breaks, so a run cancelled at 9 GB of 10
would start again from zero. specbench downloads LFS files (every GGUF) itself into
``<repo storage>/partial/<sha256>.part``, which stays, asks for the rest with an HTTP Range request,
and finally moves the file into huggingface_hub's cache layout, where huggingface_hub finds it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from specbench.base.paths import inside
from specbench.parse.crash import first_line

ATTEMPTS = 5  # transfers per process before the run gives up (the bytes stay for the next run)


class TransferBroken(Exception):
    """The transfer broke off ``ATTEMPTS`` times; ``kept`` bytes are on disk for the next run."""

    def __init__(self, reason: str, kept: int):
        super().__init__(reason)
        self.kept = kept


def download(
    url: str,
    headers: dict[str, str],
    part: Path,
    size: int | None,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """Fetch ``url`` into ``part``, continuing from the bytes already there. HTTP errors are raised as
    huggingface_hub's; network errors are retried by Range request, then end in TransferBroken."""
    import httpx2
    from huggingface_hub.utils import get_session, hf_raise_for_status

    part.parent.mkdir(parents=True, exist_ok=True)
    reason = "no attempt"
    for _ in range(ATTEMPTS):
        have = part.stat().st_size if part.exists() else 0
        if size is not None and have >= size:
            break
        request_headers = dict(headers)
        if have:
            request_headers["Range"] = f"bytes={have}-"
        try:
            with get_session().stream(
                "GET", url, headers=request_headers, follow_redirects=True, timeout=60
            ) as response:
                if response.status_code == 416 and have:  # asked past the end: what is here is all
                    break
                hf_raise_for_status(response)
                mode = "ab" if have and response.status_code == 206 else "wb"  # 200: the server resends all
                done = have if mode == "ab" else 0
                with open(part, mode) as fh:
                    for chunk in response.iter_bytes():  # as it arrives: a cut keeps all but the last packet
                        fh.write(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, size)
                    fh.flush()
                    os.fsync(fh.fileno())
            return part
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            reason = first_line(str(exc)) or type(exc).__name__
    if size is not None and part.exists() and part.stat().st_size >= size:
        return part
    raise TransferBroken(reason, part.stat().st_size if part.exists() else 0)


def place_in_cache(part: Path, storage: Path, sha256: str, commit: str, name: str) -> Path:
    """Move a finished download to where huggingface_hub keeps it; returns the snapshot path."""
    blob = inside(storage, "blobs", sha256)
    link = inside(storage, "snapshots", commit, name)  # ``name`` is the Hub's: refused before anything moves
    blob.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, blob)
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    try:
        link.symlink_to(os.path.relpath(blob, link.parent))
    except OSError:  # no symlinks (some filesystems): a copy-free move, as huggingface_hub does then
        os.replace(blob, link)
    return link

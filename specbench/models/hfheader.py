"""GGUF headers of files on the Hugging Face Hub, read with HTTP range requests (nothing downloaded).

``specbench drafts`` ranks draft candidates before anything large is fetched: a repo's GGUF files come
from one ``model_info`` call, each header from range reads in growing chunks until it parses (through
huggingface_hub's session, so HF_ENDPOINT and HF_TOKEN apply as for downloads).
"""

from __future__ import annotations

import fnmatch
import struct
from dataclasses import dataclass

from specbench.base.errors import ModelError
from specbench.models import hf
from specbench.models.gguffile import set_names
from specbench.models.ggufheader import GGUFHeader, ShortRead, parse_header
from specbench.models.spec import HfSource, hub_source
from specbench.parse.crash import first_line

FIRST_CHUNK = 512 * 1024  # bytes asked for first; each next contiguous read asks for twice as many,
MAX_CHUNK = 2 << 20  # up to this (so a header is overshot by at most 2 MB)
MAX_HEADER_BYTES = 64 << 20  # a header larger than this is refused (a GGUF's is a few MB)


@dataclass
class RangeSource:
    """Bytes of one Hub file, fetched by range as the header parser asks for them."""

    url: str
    headers: dict[str, str]
    size: int | None = None  # the file's size (from the API or Content-Range)
    bytes_read: int = 0  # received, over every range read
    _start: int = 0
    _data: bytes = b""
    _chunk: int = FIRST_CHUNK

    def read(self, offset: int, n: int) -> bytes:
        i = offset - self._start
        if 0 <= i and i + n <= len(self._data):
            return self._data[i:]
        keep = self._data[i:] if 0 <= i < len(self._data) else b""
        ask_from = offset + len(keep)
        contiguous = self.bytes_read > 0 and ask_from == self._start + len(self._data)
        self._chunk = min(self._chunk * 2, MAX_CHUNK) if contiguous else FIRST_CHUNK
        ask = max(n - len(keep), self._chunk)
        if self.size is not None:
            ask = min(ask, self.size - ask_from)
        if ask <= 0 or self.bytes_read + ask > MAX_HEADER_BYTES:
            if ask > 0:
                raise ValueError(f"its header is larger than {MAX_HEADER_BYTES >> 20} MB")
            raise ShortRead(offset + n)
        got = self._get(ask_from, ask)
        self._start, self._data = offset, keep + got
        if len(self._data) < n:
            raise ShortRead(offset + n)
        return self._data

    def _get(self, start: int, n: int) -> bytes:
        from huggingface_hub.utils import get_session, hf_raise_for_status

        headers = dict(self.headers, Range=f"bytes={start}-{start + n - 1}")
        with get_session().stream("GET", self.url, headers=headers, follow_redirects=True, timeout=60) as r:
            if r.status_code == 416:  # asked past the end
                return b""
            hf_raise_for_status(r)
            if r.status_code == 200 and start > 0:
                raise ValueError("the server ignores HTTP Range requests; cannot read the header alone")
            total = r.headers.get("Content-Range", "").rpartition("/")[2]
            if total.isdigit():
                self.size = int(total)
            chunks, got = [], 0
            for chunk in r.iter_bytes():  # stop at n: a server that sends more is cut off
                chunks.append(chunk)
                got += len(chunk)
                if got >= n:
                    break
        data = b"".join(chunks)[:n]
        self.bytes_read += len(data)
        return data


@dataclass
class RemoteGGUF:
    """One GGUF model in a Hub repo: its files (shards in order) and their sizes."""

    repo: str
    revision: str  # the commit the API answered with
    files: list[str]
    sizes: list[int | None]
    sha256: str | None = None  # the first file's LFS sha256 (what a run's manifest records)

    @property
    def name(self) -> str:
        return f"{self.repo}/{self.files[0]}"

    @property
    def size_bytes(self) -> int | None:
        return None if None in self.sizes else sum(s or 0 for s in self.sizes)


def list_ggufs(repo: str, revision: str = "main", pattern: str | None = None) -> list[RemoteGGUF]:
    """The GGUF models of a repo (a split set once, by its first shard); ``pattern`` filters by
    name. One API call; a missing or gated repo is a ModelError naming it."""
    src = hub_source(repo=repo, revision=revision, pattern=pattern or "*.gguf")
    try:
        commit, files = hf.repo_files(src)
    except Exception as exc:
        raise hf._hub_error(src, exc) from None
    by_name = {f.name: f for f in files}
    names = sorted(n for n in by_name if n.endswith(".gguf") and fnmatch.fnmatch(n, pattern or "*.gguf"))
    out = []
    for n in names:
        shards = set_names(n)
        if shards[:1] == [n]:  # a single file, or a split set's first shard
            sizes = [by_name[s].size if s in by_name else None for s in shards]
            out.append(RemoteGGUF(repo, commit, shards, sizes, by_name[n].sha256))
    return out


@dataclass
class RemoteHeader:
    """A Hub GGUF's header (first shard) and what reading it cost."""

    header: GGUFHeader
    parameter_count: int  # over every shard
    bytes_read: int


def read_remote_header(model: RemoteGGUF) -> RemoteHeader:
    """The header of every shard of ``model``, by range reads; a file shorter than its tensor
    infos say, one that 404s or does not parse is a ModelError naming it."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import build_hf_headers

    headers: list[GGUFHeader] = []
    read = 0
    for name, size in zip(model.files, model.sizes, strict=True):
        url = hf_hub_url(model.repo, name, revision=model.revision, endpoint=hf._endpoint())
        src = RangeSource(url, build_hf_headers(token=hf._token()), size)
        where = f"{model.repo}/{name}"
        try:
            header = parse_header(src)
        except ShortRead as exc:
            raise ModelError(f"{where} is truncated: it ends inside its GGUF header") from exc
        except (ValueError, struct.error, OverflowError) as exc:  # not GGUF, no Range support, too big
            raise ModelError(f"{where}: {(first_line(str(exc)) or type(exc).__name__)[:160]}") from exc
        except Exception as exc:
            raise hf._hub_error(
                HfSource.model_construct(repo=model.repo, file=name, revision=model.revision), exc
            ) from None
        read += src.bytes_read
        if src.size is not None and header.data_end > src.size:
            raise ModelError(
                f"{where} is truncated: its tensors need {header.data_end} bytes but the file has {src.size}"
            )
        headers.append(header)
    return RemoteHeader(headers[0], sum(t.n_elements for h in headers for t in h.tensors), read)

"""A GGUF header read from its first bytes: KV metadata, the token list and the tensor infos.

specbench's one GGUF reader. ``gguf.GGUFReader`` maps the whole file and builds a numpy view per array
element (~15 s for Gemma 3's 262k tokens on a slow CPU); this reader walks the header through a
``ByteSource`` (a local file, or HTTP range requests in ``specbench.models.hfheader``), so a local model
and one on the Hub are read alike, from their header's bytes only, and numeric arrays are skipped.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType

from specbench.base.errors import ModelError

_SCALARS: dict[GGUFValueType, str] = {
    GGUFValueType.UINT8: "<B", GGUFValueType.INT8: "<b", GGUFValueType.UINT16: "<H",
    GGUFValueType.INT16: "<h", GGUFValueType.UINT32: "<I", GGUFValueType.INT32: "<i",
    GGUFValueType.FLOAT32: "<f", GGUFValueType.BOOL: "<?", GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q", GGUFValueType.FLOAT64: "<d",
}  # fmt: skip
_KEEP_ARRAYS = {"tokenizer.ggml.tokens"}  # string arrays kept whole; other arrays only counted
_U64 = struct.Struct("<Q")


class ShortRead(Exception):
    """The source ended before the bytes the header needs (a truncated file)."""


class ByteSource(Protocol):
    def read(self, offset: int, n: int) -> bytes:
        """At least ``n`` bytes from ``offset`` on (more is welcome); ShortRead when the source
        ends first."""
        ...


class FileSource:
    """A local file, read in chunks from where the parser asks."""

    CHUNK = 1 << 20

    def __init__(self, path: Path):
        self.path = path
        self.size = path.stat().st_size
        self.bytes_read = 0

    def read(self, offset: int, n: int) -> bytes:
        with self.path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read(max(n, self.CHUNK))
        self.bytes_read += len(data)
        if len(data) < n:
            raise ShortRead(offset + n)
        return data


def quant_type_name(ggml_type: int) -> str:
    """A tensor type's name (``Q4_K``); ``typeN`` for one the gguf package does not know."""
    try:
        return GGMLQuantizationType(ggml_type).name
    except ValueError:
        return f"type{ggml_type}"


@dataclass(frozen=True)
class TensorInfo:
    name: str
    type: int  # GGMLQuantizationType value
    shape: tuple[int, ...]
    offset: int  # from the start of the tensor data

    @property
    def n_elements(self) -> int:
        return math.prod(self.shape)

    @property
    def n_bytes(self) -> int:
        try:
            block, size = GGML_QUANT_SIZES[GGMLQuantizationType(self.type)]
        except (ValueError, KeyError):
            return 0
        return self.n_elements * size // block


@dataclass
class GGUFHeader:
    """Everything before the tensor data. ``kv``: scalars and strings as values, arrays as their
    length, except the token list (raw token texts, as llama.cpp compares them)."""

    version: int
    kv: dict[str, Any]
    tensors: list[TensorInfo]
    data_offset: int  # where the tensor data starts (aligned)
    tokens: list[bytes] = field(default_factory=list)

    @property
    def data_end(self) -> int:
        """The file size the tensor infos need (a shorter file is truncated)."""
        return self.data_offset + max((t.offset + t.n_bytes for t in self.tensors), default=0)

    def bytes_per_token(self) -> int:
        """Weight bytes one decoded token reads: every tensor but the token embeddings, of which a
        decode reads one row (unless the output reuses them: no ``output.weight``)."""
        tied = all(t.name != "output.weight" for t in self.tensors)
        return sum(t.n_bytes for t in self.tensors if t.name != "token_embd.weight" or tied)

    def tensor_types(self) -> dict[str, float]:
        """Each tensor type's share of the weight bytes, largest first."""
        total = sum(t.n_bytes for t in self.tensors) or 1
        by = Counter[str]()
        for t in self.tensors:
            by[quant_type_name(t.type)] += t.n_bytes
        return {k: v / total for k, v in by.most_common()}


class _Cursor:
    def __init__(self, src: ByteSource):
        self.src, self.buf, self.base, self.pos = src, b"", 0, 0

    def need(self, n: int) -> int:
        """Make ``n`` bytes at ``pos`` available; returns pos's index in ``buf``."""
        i = self.pos - self.base
        if i < 0 or i + n > len(self.buf):
            self.buf, self.base, i = self.src.read(self.pos, n), self.pos, 0
        return i

    def unpack(self, fmt: str) -> Any:
        s = struct.calcsize(fmt)
        i = self.need(s)
        self.pos += s
        return struct.unpack_from(fmt, self.buf, i)[0]

    def string(self) -> bytes:
        out: list[bytes] = []
        self.strings(1, out)
        return out[0]

    def strings(self, n: int, out: list[bytes] | None) -> None:
        """``n`` strings on (appended to ``out`` unless None), with the buffer in locals: a token list
        is 50,000-250,000 of them (gemma-3's 262,144: 0.83 s one ``need`` call at a time, 0.42 s)."""
        unpack, buf, base, pos = _U64.unpack_from, self.buf, self.base, self.pos
        for _ in range(n):
            i = pos - base
            if i + 8 > len(buf):
                self.pos = pos
                i = self.need(8)
                buf, base = self.buf, self.base
            k = unpack(buf, i)[0]
            if k > 1 << 30:
                raise ValueError(f"a string of {k} bytes")
            pos += 8
            i += 8
            if i + k > len(buf):
                self.pos = pos
                i = self.need(k)
                buf, base = self.buf, self.base
            pos += k
            if out is not None:
                out.append(buf[i : i + k])
        self.pos = pos


def _value(cur: _Cursor, vtype: GGUFValueType, key: str, tokens: list[bytes]) -> Any:
    if vtype == GGUFValueType.STRING:
        return cur.string().decode("utf-8", "replace")
    if vtype != GGUFValueType.ARRAY:
        return cur.unpack(_SCALARS[vtype])
    itype = GGUFValueType(cur.unpack("<I"))
    n = cur.unpack("<Q")
    if itype in _SCALARS:  # numeric: skipped, never read
        cur.pos += n * struct.calcsize(_SCALARS[itype])
        return n
    if itype != GGUFValueType.STRING:
        for _ in range(n):
            _value(cur, itype, "", tokens)
        return n
    cur.strings(n, tokens if key in _KEEP_ARRAYS else None)
    return n


def parse_header(src: ByteSource) -> GGUFHeader:
    """Walk a GGUF header; ShortRead when the source ends inside it, ValueError when it is not
    GGUF or does not parse."""
    cur = _Cursor(src)
    i = cur.need(4)
    magic = cur.buf[i : i + 4]
    if magic != b"GGUF":
        raise ValueError(f"not a GGUF file (starts with {magic!r}, expected b'GGUF')")
    cur.pos = 4
    version = cur.unpack("<I")
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version}, which specbench cannot read")
    n_tensors, n_kv = cur.unpack("<Q"), cur.unpack("<Q")
    if n_tensors > 1 << 24 or n_kv > 1 << 24:
        raise ValueError("the header's counts are implausible")
    kv: dict[str, Any] = {}
    tokens: list[bytes] = []
    for _ in range(n_kv):
        key = cur.string().decode("utf-8", "replace")
        kv[key] = _value(cur, GGUFValueType(cur.unpack("<I")), key, tokens)
    tensors = []
    for _ in range(n_tensors):
        name = cur.string().decode("utf-8", "replace")
        n_dims = cur.unpack("<I")
        shape = tuple(cur.unpack("<Q") for _ in range(n_dims))
        ttype = cur.unpack("<I")
        tensors.append(TensorInfo(name, ttype, shape, cur.unpack("<Q")))
    align = int(kv.get("general.alignment", 32) or 32)
    data_offset = -(-cur.pos // align) * align
    return GGUFHeader(version, kv, tensors, data_offset, tokens)


@lru_cache(maxsize=16)
def _parsed(path: str, size: int, mtime_ns: int) -> GGUFHeader:
    """One parse per file and version of it in a process: a run reads a model's header in several
    stages (mostly its token list); a file written again (another size or time) is read again."""
    return parse_header(FileSource(Path(path)))


def read_local_header(path: Path) -> GGUFHeader:
    """A local model's header, for its metadata and tokens; a missing, foreign, truncated or damaged
    file is a one-line ModelError that says what to do."""
    if not path.exists():
        raise ModelError(f"model file not found: {path}; check the path or run `specbench models pull`")
    if not path.is_file():
        raise ModelError(f"model path is not a file: {path}")
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise ModelError(
            f"{path} is not a GGUF file (starts with {magic!r}, expected b'GGUF'); "
            "llama.cpp needs .gguf models (convert with convert_hf_to_gguf.py)"
        )
    stat = path.stat()
    try:
        header = _parsed(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    except ShortRead as exc:
        raise ModelError(
            f"{path} is a truncated GGUF file (it ends inside the header); delete it and fetch it again"
        ) from exc
    except (ValueError, KeyError, OverflowError, struct.error) as exc:
        if "version" in str(exc):  # parse_header: "GGUF version N, which specbench cannot read"
            raise ModelError(f"{path}: {exc}; convert it again with a current llama.cpp") from exc
        raise ModelError(
            f"{path} is a truncated or damaged GGUF file (its header does not parse); "
            "delete it and fetch it again"
        ) from exc
    if header.data_end > stat.st_size:
        raise ModelError(
            f"{path} is truncated: tensor data needs {header.data_end} bytes but the file has "
            f"{stat.st_size}; delete it and fetch it again"
        )
    return header

"""Opening GGUF files with the ``gguf`` package, fast enough for big vocabularies.

``gguf.GGUFReader`` builds one numpy view per array element: a 262k-token vocabulary (Gemma 3)
takes ~15 s on a slow CPU. ``FastGGUFReader`` keeps the reader and its ``ReaderField`` data model
and only builds arrays in bulk: numeric arrays are one view; string arrays are sliced from one
plain ndarray with their lengths read via ``memoryview`` (about 30x faster).
"""

from __future__ import annotations

import re
import struct
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFReader, GGUFValueType

from specbench.base.errors import ModelError

_SPLIT_RE = re.compile(r"^(?P<prefix>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


class FastGGUFReader(GGUFReader):
    """GGUFReader with bulk array parsing (same fields, same ``contents()``)."""

    def __init__(self, path: Path | str):
        mm = np.memmap(path, mode="r")
        self._plain = mm.view(np.ndarray)
        # numpy's stubs give ndarray __buffer__ only from Python 3.12; it is a buffer on 3.11 too
        self._mv = memoryview(self._plain)  # type: ignore[arg-type]
        # GGUFReader.__init__ re-creates the memmap; cheap (no data is read).
        super().__init__(path, "r")

    def _get_field_parts(self, orig_offs: int, raw_type: int) -> tuple[int, list[Any], list[int], list[Any]]:
        gtype = GGUFValueType(raw_type)
        if gtype != GGUFValueType.ARRAY or self.byte_order != "I":
            return super()._get_field_parts(orig_offs, raw_type)
        offs = orig_offs
        raw_itype = self._get(offs, np.uint32)
        offs += 4
        alen = self._get(offs, np.uint64)
        offs += 8
        n = int(alen[0])
        itype = GGUFValueType(int(raw_itype[0]))
        types = [gtype, itype]
        nptype = self.gguf_scalar_to_np.get(itype)
        if nptype is not None:
            arr = self._plain[offs : offs + n * np.dtype(nptype).itemsize].view(nptype)
            if len(arr) != n:
                raise ValueError("array runs past the end of the file")
            # one 1-element view per item, as GGUFReader builds them, so contents(i) works too
            return (
                offs + int(arr.nbytes) - orig_offs,
                [raw_itype, alen, *arr.reshape(-1, 1)],
                list(range(2, n + 2)),
                types,
            )
        if itype == GGUFValueType.STRING:
            parts: list[Any] = [raw_itype, alen]
            idxs: list[int] = []
            plain, mv, unpack = self._plain, self._mv, struct.Struct("<Q").unpack_from
            for _ in range(n):
                slen = unpack(mv, offs)[0]
                offs += 8
                parts.append(plain[offs - 8 : offs].view(np.uint64))
                idxs.append(len(parts))
                parts.append(plain[offs : offs + slen])
                offs += slen
            if offs > len(plain):
                raise ValueError("string array runs past the end of the file")
            return offs - orig_offs, parts, idxs, types
        return super()._get_field_parts(orig_offs, raw_type)

    def _build_tensors(self, start_offs: int, fields: list[Any]) -> None:
        """Refuse a file cut short in its tensor data before GGUFReader maps the tensors."""
        end = start_offs
        for field in fields:
            dims, raw_dtype, offset = field.parts[3], field.parts[4], field.parts[5]
            block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(int(raw_dtype[0]))]
            n_bytes = int(np.prod(dims, dtype=np.uint64)) * type_size // block
            end = max(end, start_offs + int(offset[0]) + n_bytes)
        if end > len(self.data):
            raise TruncatedGGUF(end, len(self.data))
        super()._build_tensors(start_offs, fields)


class TruncatedGGUF(Exception):
    def __init__(self, needed: int, size: int):
        super().__init__(f"tensor data needs {needed} bytes but the file has {size}")
        self.needed, self.size = needed, size


@lru_cache(maxsize=16)
def _reader(path: str, size: int, mtime_ns: int) -> FastGGUFReader:
    """One reader per file and version of it in a process: a run reads a model's header in several
    stages (mostly its token list); a file written again (another size or time) is read again."""
    return FastGGUFReader(path)


def open_gguf(path: Path) -> FastGGUFReader:
    """Open a GGUF file; a missing, foreign or truncated file is a one-line ModelError."""
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
        reader = _reader(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    except TruncatedGGUF as exc:
        raise ModelError(f"{path} is truncated: {exc}; delete it and fetch it again") from exc
    except (IndexError, struct.error) as exc:
        raise ModelError(
            f"{path} is a truncated GGUF file (it ends inside the header); delete it and fetch it again"
        ) from exc
    except (ValueError, KeyError, OverflowError) as exc:
        if "version" in str(exc):  # GGUFReader: "file appears to be version N which we cannot handle"
            raise ModelError(
                f"{path}: {str(exc).splitlines()[0][:160]}; convert it again with a current llama.cpp"
            ) from exc
        raise ModelError(
            f"{path} is a truncated or damaged GGUF file (its header does not parse); "
            "delete it and fetch it again"
        ) from exc
    return reader


def shard_names(prefix: str, count: int) -> list[str]:
    """The names of a split set, in order: ``PREFIX-00001-of-0000N.gguf`` ..."""
    return [f"{prefix}-{i:05d}-of-{count:05d}.gguf" for i in range(1, count + 1)]


def split_name(name: str) -> tuple[str, int, int] | None:
    """(prefix, shard number, shard count) of a ``PREFIX-0000K-of-0000N.gguf`` name, else None."""
    m = _SPLIT_RE.match(name)
    if not m:
        return None
    return m["prefix"], int(m["no"]), int(m["count"])


def shard_paths(first: Path) -> list[Path]:
    """All shards of a split set named after ``first`` (just ``[first]`` for a single file)."""
    info = split_name(first.name)
    return [first] if info is None else [first.with_name(n) for n in shard_names(info[0], info[2])]


def check_shards(first: Path) -> list[Path]:
    """The shards of a split set, refusing a set with a shard missing."""
    shards = shard_paths(first)
    if shards[0] != first:
        raise ModelError(
            f"{first.name} is not the first shard of its split set; give {shards[0].name} instead"
        )
    missing = [p.name for p in shards if not p.is_file()]
    if missing:
        raise ModelError(
            f"split GGUF set {first.name} is missing {len(missing)} of {len(shards)} shards "
            f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); "
            f"fetch every shard into {first.parent}"
        )
    return shards

"""The GGUF header reader, specbench's one: a model's metadata and tokens from its header's bytes alone
(test_meta checks its token texts against gguf.GGUFReader on real models)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specbench.base.errors import ModelError
from specbench.models.ggufheader import FileSource, parse_header, read_local_header
from specbench.models.meta import header_meta, read_metadata, read_token_texts
from tests.models.tiny_gguf import vocab, write_tiny_gguf


@pytest.mark.parametrize("fixture", ["smol_q4", "gemma_q4"])
def test_real_model_header_matches_the_whole_file_reader(fixture, request):
    model = request.getfixturevalue(fixture)
    src = FileSource(model.path)
    header = parse_header(src)
    assert header_meta(header, model.path.stat().st_size) == read_metadata(model.path)
    assert header.tokens == read_token_texts(model.path)
    assert header.data_end == model.path.stat().st_size  # the tensor infos account for every byte
    assert src.bytes_read < model.path.stat().st_size / 10  # the header only
    assert 0 < header.bytes_per_token() <= model.path.stat().st_size
    shares = header.tensor_types()
    assert abs(sum(shares.values()) - 1) < 1e-9
    assert list(shares) == sorted(shares, key=shares.__getitem__, reverse=True)


def test_tiny_file_and_its_tensor_bytes(tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", n_tensors=3, tensor_shape=(8, 16))
    header = read_local_header(path)
    assert [t.n_bytes for t in header.tensors] == [8 * 16 * 4] * 3  # F32
    assert header.bytes_per_token() == 3 * 8 * 16 * 4  # no token_embd: every tensor is read
    assert header_meta(header, path.stat().st_size) == read_metadata(path)


def test_truncated_inside_the_header_is_one_line(tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(path.read_bytes()[:200])
    ends_inside = r"cut.gguf is a truncated GGUF file \(it ends inside the header\)"
    with pytest.raises(ModelError, match=ends_inside) as exc:
        read_local_header(cut)
    assert "\n" not in str(exc.value)


def test_not_gguf(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(ModelError, match="not a GGUF file"):
        read_local_header(bad)
    with pytest.raises(ModelError, match="not found"):
        read_local_header(tmp_path / "missing.gguf")


def test_header_truncation_detected_through_data_end(tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", n_tensors=4)
    header = read_local_header(path)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(path.read_bytes()[: header.data_offset + 10])
    assert parse_header(FileSource(cut)).data_end > cut.stat().st_size
    with pytest.raises(ModelError, match=r"cut.gguf is truncated: tensor data needs \d+ bytes but"):
        read_local_header(cut)
    assert read_local_header(Path(path)).data_end == path.stat().st_size


class _Exact:
    """A source that hands out exactly the bytes asked for: every string of the token list then
    crosses the edge of what the parser holds (a Hub header arrives in such pieces)."""

    def __init__(self, data: bytes):
        self.data = data

    def read(self, offset: int, n: int) -> bytes:
        return self.data[offset : offset + n]


def test_token_list_read_in_pieces_is_the_whole_files(tmp_path):
    tokens = [f"tok{i}" * (i % 7) for i in range(3000)]  # empty strings too
    path = write_tiny_gguf(tmp_path / "t.gguf", tokens=tokens)
    whole = read_local_header(path)
    pieces = parse_header(_Exact(path.read_bytes()))
    assert pieces.tokens == whole.tokens == [t.encode() for t in tokens]
    assert pieces.data_offset == whole.data_offset and pieces.kv == whole.kv


def test_an_unchanged_file_is_read_once_and_a_rewritten_one_again(tmp_path):
    """A process reads each GGUF header once: the same file, unchanged, gives the same header; a file
    written again is read again."""
    path = write_tiny_gguf(tmp_path / "m.gguf", tokens=vocab(300))
    first = read_local_header(path)
    assert read_local_header(path) is first
    write_tiny_gguf(path, tokens=vocab(400))  # another vocabulary: another size
    os.utime(path, ns=(1, 1))  # and another time, whatever the file system's resolution
    again = read_local_header(path)
    assert again is not first
    assert len(again.tokens) == 400


def test_a_local_file_is_refused_as_the_one_reader_words_it(tmp_path):
    """A newer GGUF version is named in specbench's words (the gguf package's "Sorry, file appears to be
    version 4" is gone with its reader), and a file cut inside its first bytes says it ends inside
    the header (the whole-file reader called that "does not parse"); a missing file says how to get one."""
    path = write_tiny_gguf(tmp_path / "t.gguf")
    data = path.read_bytes()
    newer = tmp_path / "v4.gguf"
    newer.write_bytes(data[:4] + (4).to_bytes(4, "little") + data[8:])
    with pytest.raises(ModelError, match=r"v4.gguf: GGUF version 4, which specbench cannot read; convert it"):
        read_local_header(newer)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[:8])
    with pytest.raises(ModelError, match=r"cut.gguf is a truncated GGUF file \(it ends inside the header\)"):
        read_local_header(cut)
    with pytest.raises(ModelError, match=r"missing.gguf; check the path or run `specbench models pull`"):
        read_local_header(tmp_path / "missing.gguf")

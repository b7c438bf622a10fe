"""Hub GGUF headers by HTTP range requests, against the local Hub server holding real models."""

from __future__ import annotations

import pytest

from specbench.base.errors import ModelError
from specbench.models.hfheader import MAX_CHUNK, MAX_HEADER_BYTES, list_ggufs, read_remote_header
from specbench.models.meta import header_meta, read_metadata, read_token_texts
from tests.models.tiny_gguf import write_tiny_gguf

MB = 1 << 20


def _range_bytes(value: str) -> int:
    first, _, last = value.removeprefix("bytes=").partition("-")
    return int(last) - int(first) + 1


def _file_gets(hub):
    return [r for r in hub.requests if r.method == "GET" and "/resolve/" in r.path]


def test_real_models_read_by_ranges_only(hub, smol_q4, gemma_q4):
    hub.add_commit("org/smol", {"SmolLM2-135M-Instruct.Q4_1.gguf": smol_q4.path, "README.md": b"x"})
    hub.add_commit("org/gemma", {"gemma-3-270m-q4_k_m.gguf": gemma_q4.path})
    for repo, model in (("org/smol", smol_q4), ("org/gemma", gemma_q4)):
        hub.requests.clear()
        (remote,) = list_ggufs(repo)
        assert remote.size_bytes == model.path.stat().st_size
        got = read_remote_header(remote)
        assert header_meta(got.header, remote.size_bytes) == read_metadata(model.path)
        assert got.header.tokens == read_token_texts(model.path)
        assert got.parameter_count == model.metadata.parameter_count
        gets = _file_gets(hub)
        assert gets and all(r.range for r in gets)  # never a whole file
        fetched = sum(_range_bytes(r.range) for r in gets)
        assert fetched >= got.bytes_read
        assert got.bytes_read < 16 * MB < model.path.stat().st_size
        assert got.bytes_read < got.header.data_offset + MAX_CHUNK  # numeric arrays are skipped unread


def test_truncated_file_is_named(hub, smol_q4):
    data = smol_q4.path.read_bytes()
    hub.add_commit("org/cut", {"cut-Q4_1.gguf": data[: 20 * MB], "head-Q4_1.gguf": data[:300_000]})
    models = {m.files[0]: m for m in list_ggufs("org/cut")}
    with pytest.raises(ModelError, match=r"org/cut/cut-Q4_1.gguf is truncated: its tensors need \d+ bytes"):
        read_remote_header(models["cut-Q4_1.gguf"])
    with pytest.raises(ModelError, match="head-Q4_1.gguf is truncated: it ends inside its GGUF header"):
        read_remote_header(models["head-Q4_1.gguf"])
    assert all(_range_bytes(r.range) <= MAX_HEADER_BYTES for r in _file_gets(hub))


def test_missing_repo_and_pattern(hub, tmp_path):
    with pytest.raises(ModelError, match="repo org/none not found"):
        list_ggufs("org/none")
    hub.add_commit("org/two", {"a-Q8_0.gguf": write_tiny_gguf(tmp_path / "a.gguf"),
                               "b-Q4_0.gguf": write_tiny_gguf(tmp_path / "b.gguf")})  # fmt: skip
    assert [m.files[0] for m in list_ggufs("org/two")] == ["a-Q8_0.gguf", "b-Q4_0.gguf"]
    assert [m.files[0] for m in list_ggufs("org/two", pattern="*Q4_0.gguf")] == ["b-Q4_0.gguf"]


def test_split_set_is_one_model_with_every_shard_counted(hub, tmp_path):
    first = write_tiny_gguf(tmp_path / "src" / "m.gguf", n_tensors=3, split_max_tensors=1)
    hub.add_commit("org/split", {p.name: p for p in sorted(first.parent.glob("m-*.gguf"))})
    (model,) = list_ggufs("org/split")
    assert len(model.files) == 3
    assert read_remote_header(model).parameter_count == 3 * 8 * 16

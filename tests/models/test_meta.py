"""GGUF metadata, and every kind of bad model file getting one clear line."""

from __future__ import annotations

import os
import time

import pytest
from gguf import GGUFReader

from specbench.base.errors import ModelError
from specbench.models.meta import read_metadata, read_token_texts
from specbench.plan.prompts import chat_format
from tests.models.tiny_gguf import vocab, write_tiny_gguf


def _one_line(exc: pytest.ExceptionInfo) -> str:
    assert "\n" not in str(exc.value)
    return str(exc.value)


def test_tiny_metadata(tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", n_tensors=3, add_bos=True, bos=1, chat_template="{{ x }}")
    meta = read_metadata(path)
    assert meta.architecture == "llama" and meta.name == "Tiny Test" and meta.size_label == "1K"
    assert meta.parameter_count == 3 * 8 * 16 and meta.file_type == "F32"
    assert meta.size_bytes == path.stat().st_size and meta.n_shards == 1
    assert (meta.context_length, meta.vocab_size) == (256, 300)
    assert (meta.tokenizer_model, meta.vocab_type) == ("gpt2", "BPE")
    assert (meta.bos_token_id, meta.eos_token_id, meta.add_bos, meta.add_eos) == (1, 2, True, False)
    assert meta.has_chat_template and chat_format(path).template == "{{ x }}"
    assert read_token_texts(path)[:7] == [t.encode() for t in vocab()[:7]]
    no_template = write_tiny_gguf(tmp_path / "n.gguf", chat_template=None)
    assert chat_format(no_template).template is None and not read_metadata(no_template).has_chat_template


def test_llama_cpp_defaults_when_flags_are_absent(tmp_path):
    """An SPM vocabulary without add_bos in the file: llama.cpp adds BOS, so must we."""
    path = write_tiny_gguf(tmp_path / "spm.gguf", tokenizer="llama", bos=None, eos=None, add_bos=None)
    meta = read_metadata(path)
    assert (meta.vocab_type, meta.add_bos, meta.add_eos, meta.bos_token_id, meta.eos_token_id) == (
        "SPM", True, False, 1, 2,
    )  # fmt: skip


def test_split_set_counts_all_shards(tmp_path):
    first = write_tiny_gguf(tmp_path / "s.gguf", n_tensors=4, split_max_tensors=2)
    meta = read_metadata(first)
    assert meta.n_shards == 2 and meta.parameter_count == 4 * 8 * 16
    assert meta.size_bytes == sum(p.stat().st_size for p in tmp_path.glob("s-*.gguf"))
    with pytest.raises(ModelError) as exc:
        read_metadata(tmp_path / "s-00002-of-00002.gguf")
    assert "give s-00001-of-00002.gguf instead" in _one_line(exc)


def test_missing_file(tmp_path):
    with pytest.raises(ModelError) as exc:
        read_metadata(tmp_path / "nope.gguf")
    assert "model file not found" in _one_line(exc)


def test_not_a_gguf(tmp_path):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(ModelError) as exc:
        read_metadata(junk)
    assert "is not a GGUF file" in _one_line(exc)
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(ModelError) as exc:
        read_metadata(empty)
    assert "is not a GGUF file" in _one_line(exc)


@pytest.mark.parametrize("keep", [0.002, 0.3, 0.97])  # in the header, in the vocabulary, in the tensor data
def test_truncated_gguf(tmp_path, keep):
    path = write_tiny_gguf(tmp_path / "t.gguf", n_tensors=4, tensor_shape=(64, 64))
    data = path.read_bytes()
    path.write_bytes(data[: max(8, int(len(data) * keep))])
    with pytest.raises(ModelError) as exc:
        read_metadata(path)
    text = _one_line(exc)
    assert "truncated" in text or "damaged" in text
    assert "fetch it again" in text


def test_split_set_missing_a_shard(tmp_path):
    first = write_tiny_gguf(tmp_path / "s.gguf", n_tensors=3, split_max_tensors=1)
    (tmp_path / "s-00003-of-00003.gguf").unlink()
    with pytest.raises(ModelError) as exc:
        read_metadata(first)
    assert "missing 1 of 3 shards (s-00003-of-00003.gguf)" in _one_line(exc)


@pytest.mark.slow
def test_real_vocabularies_read_fast_and_like_gguf_reader(smol_q4, gemma_q4):
    """Our bulk reader gives GGUFReader's values, much faster (GGUFReader takes ~20 s on Gemma's 262k)."""
    start = time.perf_counter()
    tokens = read_token_texts(smol_q4.path)
    ours = time.perf_counter() - start
    start = time.perf_counter()
    field = GGUFReader(smol_q4.path).fields["tokenizer.ggml.tokens"]
    reference = [bytes(field.parts[i]) for i in field.data]
    theirs = time.perf_counter() - start
    print(f"SmolLM2 vocabulary ({len(tokens)} tokens): specbench {ours:.2f} s, GGUFReader {theirs:.2f} s")
    assert tokens == reference and len(tokens) == smol_q4.metadata.vocab_size == 49152
    assert ours < theirs
    gemma = read_token_texts(gemma_q4.path)
    assert len(gemma) == gemma_q4.metadata.vocab_size == 262144
    assert gemma[:3] == [b"<pad>", b"<eos>", b"<bos>"]
    assert chat_format(smol_q4.path).template.startswith("{% for message in messages %}")


def test_spec_facts_of_real_and_generated_files(smol_q4, smol_eagle3, tiny_mtp):
    """What the method pre-flight reads: SmolLM2 is llama without MTP layers; the generated
    EAGLE-3 head and MTP target are what their methods need (tests/fixtures/generated.py)."""
    from specbench.models.meta import read_spec_facts

    assert read_spec_facts(smol_q4.path).model_dump() == {
        "architecture": "llama", "nextn_layers": 0, "markov_head": False, "experts": 0,
        "context_length": 8192,  # SmolLM2's trained context: the limit of sweep.depth
    }  # fmt: skip
    assert read_spec_facts(smol_eagle3).architecture == "eagle3"
    mtp = read_spec_facts(tiny_mtp)
    assert mtp.architecture == "glm4moe" and mtp.nextn_layers == 1
    assert mtp.experts > 0  # a MoE target: n_cpu_moe means something there (a note on a dense one)

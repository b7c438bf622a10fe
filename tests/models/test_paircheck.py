"""The pre-flight pair check: llama.cpp's vocabulary rules (common/speculative.cpp), from metadata."""

from __future__ import annotations

import pytest

from specbench.models.paircheck import (
    SPEC_VOCAB_CHECK_START_TOKEN_ID,
    SPEC_VOCAB_MAX_SIZE_DIFFERENCE,
    check_pair,
)
from tests.models.tiny_gguf import vocab, write_tiny_gguf


@pytest.fixture
def target(tmp_path):
    return write_tiny_gguf(tmp_path / "target.gguf")


def _draft(tmp_path, **kw):
    return write_tiny_gguf(tmp_path / "draft.gguf", **kw)


def test_same_vocabulary_passes(tmp_path, target):
    result = check_pair(target, _draft(tmp_path, n_tensors=1, seed=3))
    assert result.ok and result.rule is None and "compatible" in result.message


def test_vocab_type(tmp_path, target):
    result = check_pair(target, _draft(tmp_path, tokenizer="llama"))
    assert (result.ok, result.rule) == (False, "vocab_type")
    assert "BPE (gpt2)" in result.message and "SPM (llama)" in result.message


def test_bos_flag_and_id(tmp_path, target):
    result = check_pair(target, _draft(tmp_path, add_bos=True))
    assert (result.ok, result.rule) == (False, "bos")
    assert "add_bos=False" in result.target_value and "add_bos=True" in result.draft_value
    # a different BOS id matters only when BOS is added (llama.cpp's rule)
    assert check_pair(target, _draft(tmp_path, bos=3)).ok
    with_bos = write_tiny_gguf(tmp_path / "t2.gguf", add_bos=True)
    result = check_pair(with_bos, _draft(tmp_path, add_bos=True, bos=3))
    assert (result.rule, result.target_value, result.draft_value) == (
        "bos",
        "add_bos=True bos=1",
        "add_bos=True bos=3",
    )


def test_eos_flag_and_id(tmp_path, target):
    result = check_pair(target, _draft(tmp_path, add_eos=True))
    assert (result.ok, result.rule) == (False, "eos")


def test_vocab_size_within_128(tmp_path, target):
    limit = SPEC_VOCAB_MAX_SIZE_DIFFERENCE
    assert check_pair(target, _draft(tmp_path, tokens=vocab(300 + limit))).ok
    result = check_pair(target, _draft(tmp_path, tokens=vocab(300 + limit + 1)))
    assert (result.ok, result.rule, result.target_value, result.draft_value) == (
        False,
        "vocab_size",
        "300",
        "429",
    )
    assert "by more than 128 tokens" in result.message


def test_token_texts_from_id_5(tmp_path, target):
    tokens = vocab()
    early = list(tokens)
    early[SPEC_VOCAB_CHECK_START_TOKEN_ID - 1] = "<other>"  # ids below 5 are not compared
    assert check_pair(target, _draft(tmp_path, tokens=early)).ok
    late = list(tokens)
    late[200] = "different"
    result = check_pair(target, _draft(tmp_path, tokens=late))
    assert (result.ok, result.rule) == (False, "token_text")
    assert "token 200" in result.message and "'tok200'" in result.message and "'different'" in result.message


@pytest.mark.slow
def test_real_pairs(smol_f32, smol_q4, gemma_q4):
    assert check_pair(smol_f32.path, smol_q4.path).ok
    refused = check_pair(smol_f32.path, gemma_q4.path)
    assert not refused.ok and refused.rule == "vocab_type"
    assert (
        "vocabulary" in refused.message
        and "BPE (gpt2)" in refused.message
        and "SPM (llama)" in refused.message
    )

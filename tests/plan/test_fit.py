"""A prompt that cannot fit generation.ctx_size is refused before anything runs, from a floor on its
tokens that is never above llama.cpp's count: the fewest vocabulary tokens that spell it, or its
characters over CHARS_PER_TOKEN when the vocabulary is not here."""

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.fit import CHARS_PER_TOKEN, Vocab, check_fit, one_batch, read_vocab, tokens_at_most
from specbench.plan.prompts import RenderedPrompt


def _vocab(*tokens: str, kind: str = "gpt2") -> Vocab:
    return Vocab(frozenset(tokens), tuple(sorted({len(t) for t in tokens})), kind, space_prefix=False)


def _prompt(text: str, pid: str = "long-1") -> RenderedPrompt:
    return RenderedPrompt(id=pid, category="chat", model="t", text=text, rendering="raw")


def test_the_floor_is_the_fewest_tokens_that_spell_the_text():
    v = _vocab("a", "b", "ab", "abab", "Ġ", "Ġab")  # byte-level BPE: a space is spelled Ġ
    assert v.floor("abab") == 1 and v.floor("ab ab") == 2 and v.floor("ababab") == 2
    assert v.floor("a?b") == 3  # '?' is in no token: it still costs one (byte fallback: more)
    spm = Vocab(frozenset({"\u2581the", "\u2581cat"}), (4,), "llama", space_prefix=True)
    assert spm.floor("the cat") == 2


def test_a_prompt_over_the_context_is_refused_naming_it_its_length_and_the_count(tmp_path):
    text = "x" * 20_000
    with pytest.raises(ConfigError) as exc:
        check_fit({"t": [_prompt("short"), _prompt(text)]}, {"t": tmp_path / "absent.gguf"}, 512, "c.yaml: ")
    message = str(exc.value)
    assert message.startswith(
        "c.yaml: prompt 'long-1' (20,000 characters as t sees it) is at least 1,250 tokens"
    )
    assert f"at {CHARS_PER_TOKEN} characters a token at most: t's vocabulary is not here" in message
    assert "more than generation.ctx_size 512" in message and "\n" not in message


def test_ctx_size_1_refuses_any_prompt_and_0_is_the_model_s_own(tmp_path):
    models = {"t": tmp_path / "absent.gguf"}
    with pytest.raises(ConfigError, match="is at least 3 tokens .* more than generation.ctx_size 1:"):
        check_fit({"t": [_prompt("Say hello to the people over there.  ")]}, models, 1)
    check_fit({"t": [_prompt("x" * 100_000)]}, models, 0)  # -c 0: the model's own context, not checked
    check_fit({"t": [_prompt("x" * 2046)]}, models, 2048)  # its bytes fit: no count needed


def test_the_floor_with_a_real_vocabulary_is_never_above_llama_cpp_s_count(smol_q4):
    """llama-completion of the pinned build counts 4451 tokens for this text (`prompt is too long
    (4451 tokens, max 4092)` at -c 4096, SmolLM2-135M); the floor must not exceed it."""
    vocab = read_vocab(smol_q4.path)
    assert vocab is not None and vocab.kind == "gpt2"
    floor = vocab.floor("The quick brown fox jumps over the lazy dog. " * 445)
    assert 4000 < floor <= 4451
    with pytest.raises(ConfigError, match=r"at least [\d,]+ tokens \(counted with t's vocabulary\)"):
        check_fit(
            {"t": [_prompt("The quick brown fox jumps over the lazy dog. " * 445)]}, {"t": smol_q4.path}, 512
        )


def test_one_batch_is_the_prompts_counted_tokens_when_the_default_batch_cannot_hold_them():
    """llama-speculative-simple takes the whole prompt in one batch (H200: 4288 tokens at depth 4096
    against the default 2048 failed every sample): -b is the counted tokens with BOS/EOS."""
    deep = _prompt("ctx " * 10 + "prompt").model_copy(update={"depth": 4096, "tokens": 4286})
    assert tokens_at_most(deep) == 4288
    assert one_batch(deep, None, "llama-speculative-simple") == 4288
    assert one_batch(deep, None, "llama-speculative-simple", default=8192) is None
    shallow = _prompt("x" * 1000)  # not counted: its bytes bound its tokens
    assert tokens_at_most(shallow) == 1002 and one_batch(shallow, None, "llama-speculative") is None
    assert one_batch(shallow, None, "llama-speculative", default=512) == 1002  # a 2023 tree's default
    assert one_batch(deep, 8192, "llama-speculative-simple") is None  # the cell's batch_size is kept


def test_a_batch_size_that_cannot_hold_a_counted_prompt_is_refused_in_one_line():
    deep = _prompt("x").model_copy(update={"depth": 4096, "tokens": 4286})
    with pytest.raises(ConfigError) as exc:
        one_batch(deep, 2048, "llama-speculative-simple")
    assert str(exc.value) == (
        "batch_size 2048 cannot hold prompt 'long-1' at depth 4096 (4288 tokens): llama-speculative-simple "
        "takes the whole prompt in one batch; raise batch_size to at least 4288, or leave it unset "
        "(specbench then gives -b the prompt's tokens)"
    )
    bound = _prompt("x" * 5000)  # its bytes bound its tokens: not refused on a bound
    assert one_batch(bound, 2048, "llama-speculative-simple") is None

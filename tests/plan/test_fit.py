"""A prompt that cannot fit generation.ctx_size is refused before anything runs, from a floor on its
tokens that is never above llama.cpp's count: the fewest vocabulary tokens that spell it, or its
characters over CHARS_PER_TOKEN when the vocabulary is not here."""

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.fit import CHARS_PER_TOKEN, Vocab, check_fit, read_vocab
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

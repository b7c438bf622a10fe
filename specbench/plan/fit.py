"""Whether a rendered prompt can fit ``generation.ctx_size``, said before anything runs.

llama.cpp fails every sample of a prompt longer than the context; the plan refuses it first from a
floor on its tokens: the fewest of the target's vocabulary's tokens that spell it (every tokenization
is one such spelling), else its characters over ``CHARS_PER_TOKEN``. ``one_batch`` sizes ``-b`` for
the programs that need the whole prompt in one batch, from a ceiling on its tokens."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from specbench.base.errors import ConfigError, ModelError
from specbench.plan.preflight import model_file
from specbench.plan.prompts import RenderedPrompt

CHARS_PER_TOKEN = 16  # without the vocabulary: a prompt has at least chars / 16 tokens
SPECIAL_TOKENS = 2  # BOS and EOS a tokenizer may add
LLAMA_BATCH = 2048  # llama.cpp's default logical batch (-b) since early 2024 (2023's trees: 512)


@dataclass(frozen=True)
class Vocab:
    """The token texts of a GGUF and how the text is spelled in them (byte-level BPE or SentencePiece)."""

    tokens: frozenset[str]
    lengths: tuple[int, ...]  # the distinct token lengths, ascending
    kind: str  # "gpt2" (bytes mapped to printable characters) or "llama" (spaces as U+2581)
    space_prefix: bool  # SentencePiece's leading space

    def spell(self, text: str) -> str:
        if self.kind == "gpt2":
            table = _byte_chars()
            return "".join(table[b] for b in text.encode("utf-8"))
        spelled = text.replace(" ", "\u2581")
        return "\u2581" + spelled if self.space_prefix else spelled

    def floor(self, text: str) -> int:
        """The fewest tokens that spell ``text``; a character no token starts with counts one."""
        s = self.spell(text)
        n = len(s)
        best = [0] + [n + 1] * n
        for i in range(n):
            here = best[i] + 1
            best[i + 1] = min(best[i + 1], here)  # a lone character: one token at least (byte fallback: more)
            for length in self.lengths:
                end = i + length
                if end > n:
                    break
                if here < best[end] and s[i:end] in self.tokens:
                    best[end] = here
        return best[n]


@lru_cache(maxsize=1)
def _byte_chars() -> list[str]:
    """GPT-2's byte-to-character table: how byte-level BPE vocabularies write bytes."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]  # "!".."~", "¡".."¬", "®".."ÿ"
    others = [b for b in range(256) if b not in printable]  # control bytes and spaces: past 255, in order
    chars = {**{b: chr(b) for b in printable}, **{b: chr(256 + i) for i, b in enumerate(others)}}
    return [chars[b] for b in range(256)]


@lru_cache(maxsize=4)
def read_vocab(path: Path) -> Vocab | None:
    """The vocabulary of a local GGUF; None for a tokenizer this module cannot spell for."""
    from specbench.models.ggufheader import read_local_header

    try:
        header = read_local_header(path)
    except ModelError:
        return None  # the run's own model checks say what is wrong with the file
    kind = header.kv.get("tokenizer.ggml.model")
    if kind not in ("gpt2", "llama") or not header.tokens:
        return None
    tokens = frozenset(t.decode("utf-8", "replace") for t in header.tokens if t)
    prefix = bool(header.kv.get("tokenizer.ggml.add_space_prefix", True))
    return Vocab(tokens, tuple(sorted({len(t) for t in tokens})), kind, prefix)


def check_fit(
    prompts: Mapping[str, list[RenderedPrompt]], models: Mapping[str, object], ctx_size: int, where: str = ""
) -> None:
    """Refuse a prompt that cannot fit ``ctx_size`` tokens (0: the model's own, not checked)."""
    if ctx_size <= 0:
        return
    for target, rendered in prompts.items():
        for p in rendered:
            if len(p.text.encode("utf-8")) + SPECIAL_TOKENS <= ctx_size:
                continue
            path = model_file(models.get(target))
            vocab = read_vocab(path) if path.is_file() else None
            if vocab is not None:
                floor, how = vocab.floor(p.text), f"counted with {target}'s vocabulary"
            else:
                floor = -(-len(p.text) // CHARS_PER_TOKEN)
                how = (
                    f"at {CHARS_PER_TOKEN} characters a token at most: {target}'s vocabulary is not "
                    "here to count with"
                )
            if floor > ctx_size:
                raise ConfigError(
                    f"{where}prompt {p.id!r} ({len(p.text):,} characters as {target} sees it) is at "
                    f"least {floor:,} tokens ({how}), more than generation.ctx_size {ctx_size}: "
                    "llama.cpp would fail every sample of it; raise generation.ctx_size (0: the model's own) "
                    "or shorten the prompt"
                )


def tokens_at_most(p: RenderedPrompt) -> int:
    """The most tokens llama.cpp makes of ``p`` with BOS/EOS: its count where the target's tokenizer
    made one, else its depth plus its UTF-8 bytes (a token spells at least one byte)."""
    return (p.tokens if p.tokens is not None else p.depth + len(p.text.encode("utf-8"))) + SPECIAL_TOKENS


def one_batch(
    p: RenderedPrompt, batch_size: int | None, program: str, default: int = LLAMA_BATCH
) -> int | None:
    """The ``-b`` for ``p`` where ``program`` takes the whole prompt in one batch: its tokens at most,
    when ``default`` (the --help's) cannot hold them; None when it can or the cell sets ``batch_size``.
    ConfigError when that ``batch_size`` cannot hold the counted tokens: every sample would fail."""
    need = tokens_at_most(p)
    if batch_size is not None:
        if p.tokens is not None and batch_size < need:
            at = f" at depth {p.depth}" if p.depth else ""
            raise ConfigError(
                f"batch_size {batch_size} cannot hold prompt {p.id!r}{at} ({need} tokens): {program} takes "
                f"the whole prompt in one batch; raise batch_size to at least {need}, or leave it unset "
                "(specbench then gives -b the prompt's tokens)"
            )
        return None
    return need if need > default else None

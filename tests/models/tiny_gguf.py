"""Tiny but real GGUF files, written with the gguf package's GGUFWriter (a few KB each)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGUFWriter, LlamaFileType


def vocab(n: int = 300, prefix: str = "tok") -> list[str]:
    """Token texts: 5 specials, then ``{prefix}{i}``."""
    return ["<unk>", "<s>", "</s>", "<pad>", "<mask>"] + [f"{prefix}{i}" for i in range(5, n)]


def write_tiny_gguf(
    path: Path,
    *,
    tokens: list[str] | None = None,
    tokenizer: str = "gpt2",
    bos: int | None = 1,
    eos: int | None = 2,
    add_bos: bool | None = False,
    add_eos: bool | None = None,
    chat_template: str | None = "{% for m in messages %}{{ m['content'] }}{% endfor %}",
    n_tensors: int = 2,
    tensor_shape: tuple[int, int] = (8, 16),
    split_max_tensors: int = 0,
    seed: int = 0,
) -> Path:
    """Write a small llama-architecture GGUF; with ``split_max_tensors`` a split set (returns shard 1)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tokens = tokens if tokens is not None else vocab()
    w = GGUFWriter(path, "llama", split_max_tensors=split_max_tensors)
    w.add_name("Tiny Test")
    w.add_size_label("1K")
    w.add_context_length(256)
    w.add_file_type(LlamaFileType.ALL_F32)
    w.add_tokenizer_model(tokenizer)
    if tokenizer == "gpt2":
        w.add_token_merges(["t o", "to k"])
    w.add_token_list(tokens)
    if bos is not None:
        w.add_bos_token_id(bos)
    if eos is not None:
        w.add_eos_token_id(eos)
    if add_bos is not None:
        w.add_add_bos_token(add_bos)
    if add_eos is not None:
        w.add_add_eos_token(add_eos)
    if chat_template is not None:
        w.add_chat_template(chat_template)
    rng = np.random.default_rng(seed)
    for i in range(n_tensors):
        w.add_tensor(f"blk.{i}.weight", rng.standard_normal(tensor_shape).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if split_max_tensors:
        return path.with_name(
            f"{path.name.removesuffix('.gguf')}-00001-of-{_count(n_tensors, split_max_tensors):05d}.gguf"
        )
    return path


def _count(n: int, per: int) -> int:
    return -(-n // per)

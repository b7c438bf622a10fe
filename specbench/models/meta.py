"""GGUF metadata that matters for a benchmark, read from the file's header (no model loaded).

Recorded with every run, so a result says exactly which model (architecture, size, quantization,
tokenizer) produced it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from gguf import LlamaFileType
from pydantic import BaseModel

from specbench.models.gguffile import check_shards
from specbench.models.ggufheader import GGUFHeader, quant_type_name, read_local_header

# tokenizer.ggml.model -> (llama.cpp's vocab type, its default bos and eos ids) (src/llama-vocab.cpp),
# and each vocab type's default add_bos/add_eos, for files that do not set them.
_VOCABS: dict[str, tuple[str, int | None, int | None]] = {
    "llama": ("SPM", 1, 2),
    "bert": ("WPM", 101, None),
    "gpt2": ("BPE", 11, 11),
    "hybriddna": ("BPE", 11, 11),
    "whitespace": ("BPE", 11, 11),
    "t5": ("UGM", None, 1),
    "rwkv": ("RWKV", None, None),
    "plamo2": ("PLAMO2", 1, 2),
    "no_vocab": ("NONE", None, None),
    "none": ("NONE", None, None),
}
_DEFAULT_ADD = {"SPM": (True, False), "WPM": (True, False), "UGM": (False, True)}


class GGUFMeta(BaseModel):
    """What specbench records about a GGUF model."""

    architecture: str | None = None
    name: str | None = None  # general.name
    size_label: str | None = None  # general.size_label, e.g. "135M"
    parameter_count: int  # elements of all tensors, over all shards
    file_type: str | None = None  # F32, F16, Q4_K_M, ... (general.file_type, else the commonest tensor type)
    size_bytes: int  # all shards together
    n_shards: int = 1
    context_length: int | None = None
    vocab_size: int | None = None  # tokens in the vocabulary (what llama.cpp compares)
    tokenizer_model: str | None = None  # tokenizer.ggml.model (gpt2, llama, ...)
    tokenizer_pre: str | None = None
    vocab_type: str | None = None  # llama.cpp's vocab type for tokenizer_model (BPE, SPM, ...)
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    add_bos: bool = False
    add_eos: bool = False
    has_chat_template: bool = False


def _file_type(h: GGUFHeader) -> str | None:
    """``general.file_type`` by name; for older files, the commonest type among 2-D tensors."""
    raw = h.kv.get("general.file_type")
    if raw is not None:
        try:
            return LlamaFileType(int(raw)).name.removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            return f"type{raw}"
    counts = Counter(t.type for t in h.tensors if len(t.shape) >= 2)
    return quant_type_name(counts.most_common(1)[0][0]) if counts else None


def read_metadata(path: Path) -> GGUFMeta:
    """Metadata of a GGUF file (the first shard of a split set); ModelError for a bad file."""
    path = Path(path)
    header = read_local_header(path)
    shards = check_shards(path)
    headers = [header, *(read_local_header(shard) for shard in shards[1:])]
    return header_meta(
        header,
        sum(p.stat().st_size for p in shards),
        len(shards),
        parameter_count=sum(t.n_elements for h in headers for t in h.tensors),
    )


def header_meta(
    h: GGUFHeader, size_bytes: int, n_shards: int = 1, parameter_count: int | None = None
) -> GGUFMeta:
    """``GGUFMeta`` from a GGUF header's keys as llama.cpp reads them, for a local file or one on the
    Hub (``parameter_count``: over every shard; default this file's tensors)."""
    get = h.kv.get
    arch = get("general.architecture")
    tok_model = get("tokenizer.ggml.model")
    unknown = (tok_model.upper() if tok_model else None, None, None)
    vocab_type, default_bos, default_eos = _VOCABS.get(tok_model or "", unknown)
    vocab_size = len(h.tokens) if h.tokens else get(f"{arch}.vocab_size")
    default_add_bos, default_add_eos = _DEFAULT_ADD.get(vocab_type or "", (False, False))
    bos, eos = get("tokenizer.ggml.bos_token_id"), get("tokenizer.ggml.eos_token_id")
    add_bos, add_eos = get("tokenizer.ggml.add_bos_token"), get("tokenizer.ggml.add_eos_token")
    ctx = get(f"{arch}.context_length") if arch else None
    return GGUFMeta(
        architecture=arch,
        name=get("general.name"),
        size_label=get("general.size_label"),
        parameter_count=sum(t.n_elements for t in h.tensors) if parameter_count is None else parameter_count,
        file_type=_file_type(h),
        size_bytes=size_bytes,
        n_shards=n_shards,
        context_length=int(ctx) if ctx is not None else None,
        vocab_size=int(vocab_size) if vocab_size is not None else None,
        tokenizer_model=tok_model,
        tokenizer_pre=get("tokenizer.ggml.pre"),
        vocab_type=vocab_type,
        bos_token_id=int(bos) if bos is not None else default_bos,
        eos_token_id=int(eos) if eos is not None else default_eos,
        add_bos=bool(add_bos) if add_bos is not None else default_add_bos,
        add_eos=bool(add_eos) if add_eos is not None else default_add_eos,
        has_chat_template="tokenizer.chat_template" in h.kv,
    )


def read_token_texts(path: Path) -> list[bytes]:
    """Raw token texts by id (what llama.cpp's ``llama_vocab_get_text`` returns)."""
    return list(read_local_header(Path(path)).tokens)


def human_params(n: int) -> str:
    """135_000_000 -> '135M'."""
    for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return str(n)


class SpecFacts(BaseModel):
    """What a speculative method needs to know of a GGUF (pinned src/llama-arch.cpp names)."""

    architecture: str | None = None  # general.architecture: llama, eagle3, dflash, glm4moe, ...
    nextn_layers: int = 0  # <arch>.nextn_predict_layers: next-token-prediction (MTP) layers
    markov_head: bool = False  # a `markov_w1` tensor: a DSpark drafter (a dflash GGUF with a Markov head)
    experts: int = 0  # <arch>.expert_count: a MoE model's experts (0: dense; n_cpu_moe does nothing)
    context_length: int | None = None  # <arch>.context_length: the trained context (sweep.depth's limit)


def read_spec_facts(path: Path) -> SpecFacts:
    """Architecture, MTP layers and DSpark head of a GGUF (its first shard, as llama.cpp reads it)."""
    header = read_local_header(Path(path))
    arch = header.kv.get("general.architecture")
    nextn = header.kv.get(f"{arch}.nextn_predict_layers") if arch else None
    markov = any(t.name == "markov_w1.weight" for t in header.tensors)
    experts = header.kv.get(f"{arch}.expert_count") if arch else None
    ctx = header.kv.get(f"{arch}.context_length") if arch else None
    return SpecFacts(architecture=arch, nextn_layers=int(nextn or 0), markov_head=markov,
                     experts=int(experts or 0), context_length=int(ctx) if ctx else None)  # fmt: skip

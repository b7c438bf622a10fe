"""The llama.cpp options a user tunes, declared once: one ``LlamaOption`` per option.

Each entry holds everything specbench knows about the option (pyperf's ``_metadata.py`` is the
shape): its config key (llama-bench's name for it), its flag spellings newest first (older
eras' spellings after the pinned build's), llama-bench's spelling, its value type and allowed
values, which runs it applies to (``scope``, and for a speculation option the methods that read
it: llama.cpp ignores it elsewhere), and its one-line description. Read from here: the cell's
fields (``specbench.results.cell``), the config keys, sweep axes and JSON Schema
(``specbench.plan.options``), the flag translation and --help probe (``specbench.builder.options``),
the flags a free argument may not repeat, the plan's notes and collapses for an option that does
not apply, the report's option columns and the docs table (``options_table``). Adding an option
is one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BeforeValidator, Field

Kind = Literal["value", "tristate", "toggle", "load_mode"]
# model: the target's option, which a baseline runs with too (a draft alone: its ``_draft`` twin);
# draft: the draft model's (ignored without one); spec: the speculation's (``methods`` read it).
Scope = Literal["model", "draft", "spec"]

# llama.cpp's KV cache types (common/arg.cpp kv_cache_types); a build's --help may list fewer.
CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
LOAD_MODES = ("auto", "none", "mmap", "mlock", "mmap+mlock", "dio")


def _on_off(v: Any) -> Any:
    """YAML reads on/off as booleans: ``flash_attn: on`` is the string llama.cpp takes."""
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, str) and v.lower() in ("on", "off", "auto"):
        return v.lower()
    raise ValueError(f"must be on, off or auto (got {v!r})")


def _switch(v: Any) -> Any:
    if isinstance(v, str) and v.lower() in ("on", "off", "true", "false", "yes", "no"):
        return v.lower() in ("on", "true", "yes")
    if not isinstance(v, bool):
        raise ValueError(f"must be on or off (got {v!r})")
    return v


def _cache_type(v: Any) -> Any:
    if not isinstance(v, str) or v.lower() not in CACHE_TYPES:
        raise ValueError(f"unknown cache type {v!r} (llama.cpp takes: {', '.join(CACHE_TYPES)})")
    return v.lower()


def _joined(v: Any) -> Any:
    """A list (of patterns, devices or proportions) as llama.cpp's one comma-separated value."""
    if isinstance(v, list):
        if not v or any(isinstance(x, (bool, dict, list)) or x is None for x in v):
            raise ValueError("must be a text or a non-empty list of texts or numbers")
        return ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return f"{v:g}"
    return v


FlashAttn = Annotated[Literal["on", "off", "auto"], BeforeValidator(_on_off)]
Switch = Annotated[bool, BeforeValidator(_switch)]
CacheType = Annotated[str, BeforeValidator(_cache_type)]
Joined = Annotated[str, BeforeValidator(_joined), Field(min_length=1)]
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]
SplitMode = Literal["none", "layer", "row", "tensor"]


def _ranged(lo: int, hi: int) -> Any:
    return Annotated[int, Field(ge=lo, le=hi)]


@dataclass(frozen=True)
class LlamaOption:
    """One option: config key, flag spellings newest first (``off``: a toggle's negative switch),
    its config type and allowed values (``values``: as the docs table says them), llama-bench's
    spelling, the runs it applies to (``scope``; ``methods``: the only methods that read it) and
    its one-line description."""

    key: str
    spellings: tuple[str, ...]
    type: Any  # the config value's type (a pydantic annotation); the cell holds its plain form
    values: str
    description: str
    kind: Kind = "value"
    off: tuple[str, ...] = ()
    bench: str | None = None  # llama-bench's test parameter (None: it has none)
    scope: Scope = "model"
    methods: tuple[str, ...] = ()  # spec scope: the methods that read it (llama.cpp ignores it elsewhere)
    moe_only: bool = False  # llama.cpp ignores it on a dense model (no MoE experts)
    listed: bool = False  # a value the binary's --help does not list is refused before anything runs
    bench_sep: str | None = None  # llama-bench's separator for the items of a list value (it takes ",")

    @property
    def draft(self) -> bool:
        """The draft model's own value (the speculative binaries' -ctkd, -devd, -td, ...)."""
        return self.scope == "draft"

    @property
    def cell_type(self) -> type:
        """The value's plain type as a cell (and a stored sample) holds it."""
        t = self.type
        if get_origin(t) is Annotated:
            t = get_args(t)[0]
        return str if get_origin(t) is Literal else t


_SAME_K = "as cache_type_k"
OPTIONS: tuple[LlamaOption, ...] = (
    LlamaOption("flash_attn", ("-fa", "--flash-attn"), FlashAttn, "on, off, auto",
                "Flash attention: on, off or auto.", "tristate", bench="-fa", listed=True),
    LlamaOption("cache_type_k", ("-ctk", "--cache-type-k"), CacheType, " ".join(CACHE_TYPES),
                "KV cache type of K, e.g. f16, q8_0, q4_0.", bench="-ctk", listed=True),
    LlamaOption("cache_type_v", ("-ctv", "--cache-type-v"), CacheType, _SAME_K,
                "KV cache type of V (a quantized V needs flash_attn on).", bench="-ctv", listed=True),
    LlamaOption("cache_type_k_draft", ("--spec-draft-type-k", "-ctkd", "--cache-type-k-draft"), CacheType,
                _SAME_K, "The draft model's KV cache type of K.", scope="draft", listed=True),
    LlamaOption("cache_type_v_draft", ("--spec-draft-type-v", "-ctvd", "--cache-type-v-draft"), CacheType,
                _SAME_K, "The draft model's KV cache type of V.", scope="draft", listed=True),
    LlamaOption("ctx_size_draft", ("-cd", "--ctx-size-draft"), Count, "N >= 0 (0: the draft model's own)",
                "The draft model's own context size (older builds; the pinned build's draft shares "
                "generation.ctx_size).", scope="draft"),
    LlamaOption("n_cpu_moe", ("-ncmoe", "--n-cpu-moe"), Count, "N >= 0",
                "Keep the MoE experts of the target's first N layers on the CPU.", bench="-ncmoe",
                moe_only=True),
    LlamaOption("n_cpu_moe_draft", ("--spec-draft-n-cpu-moe", "-ncmoed", "--n-cpu-moe-draft"), Count,
                "N >= 0", "Keep the MoE experts of the draft's first N layers on the CPU.", scope="draft",
                moe_only=True),
    LlamaOption("override_tensor", ("-ot", "--override-tensor"), Joined,
                "`<regex>=<buffer type>,...` (or a list)", "Tensor buffer overrides of the target, e.g. "
                "exps=CPU.", bench="-ot", bench_sep=";"),
    LlamaOption("override_tensor_draft", ("--spec-draft-override-tensor", "-otd", "--override-tensor-draft"),
                Joined, "as override_tensor", "Tensor buffer overrides of the draft model.", scope="draft"),
    LlamaOption("batch_size", ("-b", "--batch-size"), Positive, "N >= 1", "Logical batch size.", bench="-b"),
    LlamaOption("ubatch_size", ("-ub", "--ubatch-size"), Positive, "N >= 1", "Physical batch size.",
                bench="-ub"),
    LlamaOption("threads_batch", ("-tb", "--threads-batch"), Positive, "N >= 1",
                "Threads for prompt and batch processing."),
    LlamaOption("split_mode", ("-sm", "--split-mode"), SplitMode, "none, layer, row, tensor",
                "How to split the model over GPUs.", bench="-sm", listed=True),
    LlamaOption("tensor_split", ("-ts", "--tensor-split"), Joined, "e.g. 3,1 (or a list)",
                "Share of the model per GPU.", bench="-ts", bench_sep="/"),
    LlamaOption("main_gpu", ("-mg", "--main-gpu"), Count, "a GPU index",
                "The GPU for the whole model or its intermediate results.", bench="-mg"),
    LlamaOption("device", ("-dev", "--device"), Joined, "CUDA0, CUDA0,CUDA1 (or a list), none",
                "Devices of the target.", bench="-dev", bench_sep="/"),
    LlamaOption("device_draft", ("--spec-draft-device", "-devd", "--device-draft"), Joined, "as device",
                "Devices of the draft model.", scope="draft"),
    LlamaOption("load_mode", ("-lm", "--load-mode"), Literal[LOAD_MODES], ", ".join(LOAD_MODES),
                "Model loading (older builds: --no-mmap, --mlock).", "load_mode", bench="-lm"),
    LlamaOption("kv_offload", ("-kvo", "--kv-offload"), Switch, "on, off",
                "KV cache on the GPU: on (llama.cpp's default) or off.", "toggle",
                off=("-nkvo", "--no-kv-offload"), bench="-nkvo"),
    LlamaOption("repack", ("--repack",), Switch, "on, off",
                "Weight repacking for the CPU: on (default) or off.", "toggle",
                off=("-nr", "--no-repack"), bench="--repack"),
    LlamaOption("poll", ("--poll",), _ranged(0, 100), "0-100", "Polling level while waiting for work.",
                bench="--poll"),
    LlamaOption("prio", ("--prio",), _ranged(-1, 3), "-1 low, 0 normal, 1 medium, 2 high, 3 realtime",
                "Process and thread priority (the speculative binary's draft threads keep --prio-draft's "
                "default).", bench="--prio"),
    LlamaOption("backend_sampling_draft", ("--spec-draft-backend-sampling",), Switch, "on, off",
                "The draft's sampling offloaded to the backend (the pinned build's default: on; builds "
                "without the option refuse it).", "toggle", off=("--no-spec-draft-backend-sampling",),
                scope="draft"),
    LlamaOption("threads_draft", ("--spec-draft-threads", "-td", "--threads-draft"), Positive, "N >= 1",
                "Threads of the draft model while it drafts (default: generation.threads; target and "
                "draft share the cores on a CPU).", scope="draft"),
    LlamaOption("ngram_mod_n_min", ("--spec-ngram-mod-n-min",), _ranged(0, 1024), "0-1024 (default 48)",
                "ngram-mod: the shortest draft it proposes.", scope="spec", methods=("ngram-mod",)),
    LlamaOption("ngram_mod_n_max", ("--spec-ngram-mod-n-max",), _ranged(0, 1024), "0-1024 (default 64)",
                "ngram-mod: the longest draft it proposes.", scope="spec", methods=("ngram-mod",)),
    LlamaOption("ngram_mod_n_match", ("--spec-ngram-mod-n-match",), _ranged(1, 1024), "1-1024 (default 24)",
                "ngram-mod: the lookup length it matches.", scope="spec", methods=("ngram-mod",)),
)  # fmt: skip
BY_KEY: dict[str, LlamaOption] = {o.key: o for o in OPTIONS}
OPTION_NAMES: tuple[str, ...] = tuple(BY_KEY)
# The draft's own value of a target option (its counterpart for a draft model run alone).
DRAFT_KEYS: dict[str, str] = {o.key: f"{o.key}_draft" for o in OPTIONS if f"{o.key}_draft" in BY_KEY}


def applies(opt: LlamaOption, method: str, has_draft: bool) -> bool:
    """Whether llama.cpp reads ``opt`` on a cell of ``method`` (``has_draft``: a draft model runs):
    a draft option needs a draft model, a speculation option one of its methods (a part of a
    combination counts: ``draft+ngram-mod`` reads ngram-mod's)."""
    if opt.scope == "draft":
        return has_draft
    if opt.scope == "spec":
        return any(m in method.split("+") for m in opt.methods)
    return True


def _applies_text(opt: LlamaOption) -> str:
    if opt.moe_only:
        return f"{'the draft' if opt.draft else 'the target'}, a MoE model (ignored on a dense one)"
    if opt.scope == "spec":
        return f"speculation with {', '.join(opt.methods)} (ignored by other methods)"
    if opt.scope == "draft":
        return "the draft model"
    return "every run (the draft too, unless a `_draft` key exists)"


def options_table() -> str:
    """The docs table of every option (docs/llama-options.md holds it; a test keeps it current)."""
    rows = ["| key | llama.cpp flags (newest first) | values | applies to | what it is |", "| --- " * 5 + "|"]
    for o in OPTIONS:
        flags = ", ".join(f"`{s}`" for s in o.spellings) + (
            " / " + ", ".join(f"`{s}`" for s in o.off) if o.off else ""
        )
        rows.append(f"| `{o.key}` | {flags} | {o.values} | {_applies_text(o)} | {o.description} |")
    return "\n".join(rows) + "\n"

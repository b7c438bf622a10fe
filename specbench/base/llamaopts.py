"""The llama.cpp options a user tunes, declared once: one ``LlamaOption`` per option.

Each entry holds all specbench knows of it (key, flag spellings per era, type and values, scope,
refusals, description); the cell, config, schema, flag translation, plan and docs table read it,
so adding an option or an axis is one entry here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BeforeValidator, Field

from specbench.base.methods import method_of, parse_method, parts

Kind = Literal["value", "tristate", "toggle", "load_mode"]
# model: the target's option, which a baseline runs with too (a draft alone: its ``_draft`` twin);
# draft: the draft model's (ignored without one); spec: the speculation's (``methods`` read it);
# draft_context: read by the methods that run a draft context; lookup: by the n-gram lookups.
Scope = Literal["model", "draft", "spec", "draft_context", "lookup"]
# option: a key of the whole config, of a pair and of ``sweep:`` ([]: not swept), a cell field after
# the speculation's axes; axis: the speculation's own, a ``sweep:`` list only (default ``sweep``), a
# cell field before the options; server: as axis, a cell field after the runner (llama-server's).
Group = Literal["option", "axis", "server"]

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


def _rates(v: Any) -> Any:
    """Synthetic acceptance rates: probabilities (a list or comma-joined), none above the one before."""
    items = v.split(",") if isinstance(v, str) else v
    if not isinstance(items, list) or not items:
        raise ValueError("must be a list of probabilities, e.g. [0.9, 0.7, 0.5] or '0.9,0.7,0.5'")
    rates: list[float] = []
    for x in items:
        try:
            rate = float(x.strip()) if isinstance(x, str) else x
        except ValueError:
            rate = None
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
            raise ValueError(f"each rate must be a number from 0 to 1 (got {x!r})")
        if rates and rate > rates[-1]:
            raise ValueError(
                f"rates must not rise from one draft position to the next (got {rate:g} after "
                f"{rates[-1]:g}): each is the chance a draft is accepted up to there"
            )
        rates.append(float(rate))
    return ",".join(f"{r:.12g}" for r in rates)


FlashAttn = Annotated[Literal["on", "off", "auto"], BeforeValidator(_on_off)]
Switch = Annotated[bool, BeforeValidator(_switch)]
CacheType = Annotated[str, BeforeValidator(_cache_type)]
Joined = Annotated[str, BeforeValidator(_joined), Field(min_length=1)]
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]
SynthRates = Annotated[str, BeforeValidator(_rates)]
SplitMode = Literal["none", "layer", "row", "tensor"]


def _ranged(lo: int, hi: int) -> Any:
    return Annotated[int, Field(ge=lo, le=hi)]


MethodName = Annotated[str, BeforeValidator(parse_method)]  # a --spec-type name, or several joined by +
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
SynthLen = Annotated[float, Field(ge=1.0, allow_inf_nan=False)]


@dataclass(frozen=True)
class Refusal:
    """Values llama.cpp refuses with flash attention off (it says only ``unable to create context``)."""

    what: str  # the values, for people: "a quantized cache_type_v"
    said: str  # llama.cpp's error line (src/llama-context.cpp)
    other: str  # the cure besides flash attention: "cache_type_v f16/bf16/f32"
    refused: Any  # Callable[[value], bool]: the value is one of them


UNQUANTIZED = frozenset({"f32", "f16", "bf16"})  # KV cache types ggml does not count as quantized


def _quantized_v(key: str) -> Refusal:
    return Refusal(
        f"a quantized {key}", "quantized V cache requires flash_attn to be enabled", f"{key} f16/bf16/f32",
        lambda v: v is not None and str(v).lower() not in UNQUANTIZED,
    )  # fmt: skip


@dataclass(frozen=True)
class LlamaOption:
    """One option: config key, flag spellings newest first (``off``: a toggle's negative switch),
    config type, ``values`` as the docs table says them, and its one-line description."""

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
    group: Group = "option"
    sweep: tuple = ()  # an axis's default values (group axis/server; None among them: null is a value)
    cell_default: Any = None  # the cell's value where the axis is not set (None: llama.cpp's default)
    refuses: tuple[Refusal, ...] = ()  # values llama.cpp refuses with flash attention off
    # a build without the axis's flag: refuse the method, take only the default, or one value (noted)
    missing: Literal["refuse", "default", "one"] = "default"
    at_most: str | None = None  # an axis whose value may not exceed another's (draft_min <= draft_max)
    first: bool = False  # an axis of the first run-folder format (history ids always hold it)
    cuts: str = ""  # what a value away from its default does to drafting (why a run may draft nothing)
    # the report's own column (a cell's name leaves it to it): always, where rows differ, or apart
    column: Literal["", "always", "varies", "apart"] = ""
    synthetic: bool = False  # drafts accepted at random: a cell with a value is a simulation

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
_SIZE = "--spec-{method}-size-"  # an n-gram lookup's own size option (older builds: one for all)
OPTIONS: tuple[LlamaOption, ...] = (
    # the speculation's own axes, in the cell's order
    LlamaOption("method", ("--spec-type",), MethodName, "draft, ngram-mod, draft+ngram-mod, ...",
                "Speculative methods: any --spec-type of the build, or several joined by `+`.", first=True,
                group="axis", sweep=("draft",), cell_default="none", scope="spec", column="always"),
    LlamaOption("draft_max", ("--spec-draft-n-max", "--draft-max", "--draft-n", "--draft"), Positive,
                "N >= 1", "Draft tokens per step (the draft length g).", group="axis", sweep=(8,),
                scope="draft_context", missing="refuse", first=True, column="always"),
    LlamaOption("draft_min", ("--spec-draft-n-min", "--draft-min", "--draft-n-min"), Count, "N >= 0",
                "Drafts shorter than this are not verified.", group="axis", sweep=(0,), scope="draft_context",
                cuts="drops drafts shorter than that", at_most="draft_max", first=True, column="varies"),
    # passed on every speculative run: older builds defaulted to 0.75 or 0.8, the pin to 0.00
    LlamaOption("p_min", ("--spec-draft-p-min", "--draft-p-min"), Probability, "0-1",
                "The draft stops at its first token below this probability.", group="axis", sweep=(0.0,),
                scope="draft_context", missing="one", first=True,
                cuts="ends a draft at the first token the draft is less sure of", column="varies"),
    LlamaOption("ngram_size_n", (_SIZE + "n", "--spec-ngram-size-n"), Positive, "N >= 1, null (12)",
                "N-gram methods' lookup length (--spec-<method>-size-n); null: llama.cpp's 12.",
                group="axis", sweep=(None,), scope="lookup"),
    LlamaOption("ngram_size_m", (_SIZE + "m", "--spec-ngram-size-m"), Positive, "N >= 1, null (48)",
                "N-gram methods' draft length (--spec-<method>-size-m); null: llama.cpp's 48.",
                group="axis", sweep=(None,), scope="lookup"),
    LlamaOption("ngl", ("-ngl", "--gpu-layers", "--n-gpu-layers"), Count, "N >= 0",
                "Target layers offloaded to the GPU (-ngl).", group="axis", sweep=(0,), first=True,
                column="apart"),
    LlamaOption("ngld", ("--spec-draft-ngl", "-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft"), Count,
                "N >= 0", "Draft layers offloaded to the GPU (-ngld).", group="axis", sweep=(0,),
                scope="draft", first=True, column="apart"),
    LlamaOption("parallel", ("-np", "--parallel"), Positive, "N >= 1",
                "Requests in flight at once (llama-server slots); above 1 needs runner: server.",
                group="server", sweep=(1,), cell_default=1, column="apart"),
    LlamaOption("synth_len", ("--spec-synth-len",), SynthLen, "N >= 1",
                "Synthetic acceptance lengths (runner: server): draft-model cells run again per value.",
                group="server", scope="draft_context", synthetic=True),
    # the tuned options
    LlamaOption("flash_attn", ("-fa", "--flash-attn"), FlashAttn, "on, off, auto",
                "Flash attention: on, off or auto.", "tristate", bench="-fa", listed=True),
    LlamaOption("cache_type_k", ("-ctk", "--cache-type-k"), CacheType, " ".join(CACHE_TYPES),
                "KV cache type of K, e.g. f16, q8_0, q4_0.", bench="-ctk", listed=True),
    LlamaOption("cache_type_v", ("-ctv", "--cache-type-v"), CacheType, _SAME_K,
                "KV cache type of V (a quantized V needs flash_attn on).", bench="-ctv", listed=True,
                refuses=(_quantized_v("cache_type_v"),)),
    LlamaOption("cache_type_k_draft", ("--spec-draft-type-k", "-ctkd", "--cache-type-k-draft"), CacheType,
                _SAME_K, "The draft model's KV cache type of K.", scope="draft", listed=True),
    LlamaOption("cache_type_v_draft", ("--spec-draft-type-v", "-ctvd", "--cache-type-v-draft"), CacheType,
                _SAME_K, "The draft model's KV cache type of V.", scope="draft", listed=True,
                refuses=(_quantized_v("cache_type_v_draft"),)),
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
                "How to split the model over GPUs.", bench="-sm", listed=True,
                refuses=(Refusal("split_mode=tensor", "SPLIT_MODE_TENSOR requires flash_attn to be enabled",
                                 "another split_mode", lambda v: v == "tensor"),)),
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
    LlamaOption("synth_rates", ("--spec-synth-rates",), SynthRates,
                "P0,P1,... (a list): draft_max probabilities from 0 to 1, none above the one before",
                "Synthetic acceptance by draft position (runner: server; beside sweep.synth_len, never "
                "with it): drafts accepted at random, up to position i with chance Pi; the output is not "
                "compared.", scope="draft_context", synthetic=True),
    LlamaOption("ngram_mod_n_min", ("--spec-ngram-mod-n-min",), _ranged(0, 1024), "0-1024 (default 48)",
                "ngram-mod: the shortest draft it proposes.", scope="spec", methods=("ngram-mod",)),
    LlamaOption("ngram_mod_n_max", ("--spec-ngram-mod-n-max",), _ranged(0, 1024), "0-1024 (default 64)",
                "ngram-mod: the longest draft it proposes.", scope="spec", methods=("ngram-mod",)),
    LlamaOption("ngram_mod_n_match", ("--spec-ngram-mod-n-match",), _ranged(1, 1024), "1-1024 (default 24)",
                "ngram-mod: the lookup length it matches.", scope="spec", methods=("ngram-mod",)),
)  # fmt: skip
BY_KEY: dict[str, LlamaOption] = {o.key: o for o in OPTIONS}
TUNED: tuple[LlamaOption, ...] = tuple(o for o in OPTIONS if o.group == "option")  # config keys
AXES: tuple[LlamaOption, ...] = tuple(o for o in OPTIONS if o.group != "option")  # the speculation's
OPTION_NAMES: tuple[str, ...] = tuple(o.key for o in TUNED)
METHOD = AXES[0]  # the method: the axis the others' ``applies`` reads
DRAFT_LENGTH, GPU_LAYERS = BY_KEY["draft_max"], BY_KEY["ngl"]  # the plots' x axes
PARALLEL, SYNTH_LEN, REPACK, BATCH = (BY_KEY[k] for k in ("parallel", "synth_len", "repack", "batch_size"))
FLASH_ATTN, DRAFT_SAMPLING = BY_KEY["flash_attn"], BY_KEY["backend_sampling_draft"]  # read by name


def applies(opt: LlamaOption, method: str, has_draft: bool) -> bool:
    """Whether llama.cpp reads ``opt`` on a cell of ``method`` (``has_draft``: a draft model runs):
    a draft option needs a draft model, a speculation option one of its methods (a part of a
    combination counts: ``draft+ngram-mod`` reads ngram-mod's)."""
    if opt.scope == "draft":
        return has_draft
    if opt.scope == "spec":
        return any(m in parts(method) for m in opt.methods)
    if opt.scope in ("draft_context", "lookup"):  # the method table's flag of that name
        return any(getattr(method_of(p), opt.scope) for p in parts(method))
    return True


def _applies_text(opt: LlamaOption) -> str:
    if opt.moe_only:
        return f"{'the draft' if opt.draft else 'the target'}, a MoE model (ignored on a dense one)"
    if opt.scope == "spec":
        return f"speculation with {', '.join(opt.methods)} (ignored by other methods)"
    if opt.scope == "draft":
        return "the draft model"
    if opt.scope == "draft_context":
        return "speculation with a draft model or MTP (ignored by the n-gram methods)"
    return "every run (the draft too, unless a `_draft` key exists)"


def options_table() -> str:
    """The docs table of every option (docs/llama-options.md holds it; a test keeps it current)."""
    rows = ["| key | llama.cpp flags (newest first) | values | applies to | what it is |", "| --- " * 5 + "|"]
    for o in TUNED:
        flags = ", ".join(f"`{s}`" for s in o.spellings) + (
            " / " + ", ".join(f"`{s}`" for s in o.off) if o.off else ""
        )
        rows.append(f"| `{o.key}` | {flags} | {o.values} | {_applies_text(o)} | {o.description} |")
    return "\n".join(rows) + "\n"

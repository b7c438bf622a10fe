"""The sections of a run config: which llama.cpp, pairs, prompts, the sweep's lists and generation.

Each is strict (unknown keys are errors) and documents its fields in docstrings, from which the
config reference and ``specbench schema`` are generated; ``plan.config`` puts them together.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from specbench.base.paths import LocalPath, Name
from specbench.plan.methods import draft_free, needs_draft_model, parse_method
from specbench.plan.options import Arg, OptionValues, SweepOptions
from specbench.results.records import Generation

# A speculative method: a --spec-type name of the build, or several joined by `+` (plan.methods).
Method = Annotated[str, BeforeValidator(parse_method)]

# Passed on every speculative run. The pinned llama.cpp's default (--help: 0.00); older builds
# defaulted to 0.75 or 0.8, so it is always given explicitly to measure the same thing.
DEFAULT_P_MIN = 0.0


PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


# A config's cmake argument: -DNAME=VALUE or -DNAME:TYPE=VALUE. Names that reach outside the build
# folder: compilers and launchers run a program, toolchain/include files run cmake code, output
# directories and the install prefix write elsewhere.
_CMAKE_DEFINE = re.compile(r"^-D([A-Za-z_][A-Za-z0-9_]*)(?::[A-Z]+)?=.*$", re.S)
_CMAKE_REACHES_OUT = re.compile(
    r"COMPILER|LAUNCHER|TOOLCHAIN|INCLUDE|OUTPUT_DIRECTORY|OUTPUT_PATH|INSTALL_PREFIX|_EXECUTABLE$|"
    r"^CMAKE_(PROJECT|USER_MAKE_RULES|MODULE_PATH|PREFIX_PATH|FIND_ROOT)",
    re.I,
)


def _numeric(annotation: Any) -> bool:
    """int, float, or either of them or None."""
    args = set(get_args(annotation)) - {type(None)} if get_args(annotation) else {annotation}
    return bool(args) and args <= {int, float}


def refuse_bool_number(cls: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """YAML reads yes/no/on/off/true/false as booleans and pydantic reads true as 1 for a number:
    ``--set repetitions=true`` would silently mean one repetition. A boolean for a number is refused."""
    field = cls.model_fields.get(info.field_name or "")
    if isinstance(value, bool) and field is not None and _numeric(field.annotation):
        raise ValueError(
            f"must be a number, not {str(value).lower()} (YAML reads yes/no/on/off/true/false as booleans)"
        )
    return value


class Strict(BaseModel):
    # a field's docstring is its description: the config reference and `specbench schema` show it
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    _no_bool_numbers = field_validator("*", mode="before")(classmethod(refuse_bool_number))


class LlamaCppConfig(Strict):
    """Which llama.cpp to build, as ``specbench build`` takes it; one entry of a list of builds."""

    label: Name | None = None  # the build axis (required in a list)
    """The build's name in samples and reports (the build axis); required in a list."""
    source: LocalPath | None = None  # a llama.cpp tree or git checkout; None = the pinned tree
    """A llama.cpp tree or git checkout, relative to the config (unset: the pinned tree)."""
    ref: str | None = Field(default=None, min_length=1)  # a git ref in `source`, built from a clean export
    """A branch, tag or commit of the `source` checkout, built from a clean export of it."""
    backend: Literal["auto", "cpu", "cuda", "metal"] = "auto"
    """auto: CUDA with nvcc and an NVIDIA GPU, Metal on Apple silicon, else CPU."""
    cmake_args: list[str] = Field(default_factory=list)
    """Extra -DNAME=VALUE cmake arguments (debug and sanitizer builds refused)."""

    @field_validator("cmake_args")
    @classmethod
    def _defines_only(cls, args: list[str]) -> list[str]:
        """A shared config's cmake arguments only set build options: not cmake's own options
        (``-C script``, ``-P``), nor a variable that runs a program or writes outside the build
        folder (a compiler, a launcher, a toolchain or include file, an output directory)."""
        for i, arg in enumerate(args):
            m = _CMAKE_DEFINE.match(arg)
            if m is None:
                raise ValueError(f"[{i}] {arg!r}: give -DNAME=VALUE build options only")
            if _CMAKE_REACHES_OUT.search(m.group(1)):
                raise ValueError(
                    f"[{i}] {arg!r}: {m.group(1)} runs a program or writes outside specbench's build "
                    "folder, which a config may not set; set it in the environment (CC, CXX, "
                    "CUDACXX) or build by hand with `specbench build --cmake-arg`"
                )
        return args

    jobs: int | None = Field(default=None, ge=1)
    """Parallel compile jobs (unset: cmake's choice)."""
    args: list[Arg] = Field(
        default_factory=list, description="Extra arguments for every llama.cpp invocation of this build."
    )

    def describe(self) -> str:
        """``base: ../llama.cpp@main (cpu)`` for messages."""
        where = str(self.source) if self.source is not None else "the pinned tree"
        at = f"@{self.ref}" if self.ref else ""
        return f"{self.label + ': ' if self.label else ''}{where}{at} ({self.backend})"


def _one_or_many(v: Any) -> str:
    return "@list" if isinstance(v, list) else "@one"


# `llama_cpp:` is one build (a mapping) or a list of labelled builds; the tags never show in errors.
LlamaCppField = Annotated[
    Annotated[LlamaCppConfig, Tag("@one")] | Annotated[list[LlamaCppConfig], Tag("@list")],
    Discriminator(_one_or_many),
]


_Label = Annotated[str, Field(min_length=1)]
RunnerLabel = _Label | Annotated[list[_Label], Field(min_length=1)]  # GitHub `runs-on`: a label or several


class RunsOnConfig(Strict):
    """Shards: which CI runner (GitHub ``runs-on`` label or labels) a cell needs, by the target's ngl."""

    ngl: dict[NonNegativeInt, RunnerLabel] = Field(default_factory=dict)
    """Runner label(s) of the cells whose target runs at this ngl: {0: ubuntu-latest}."""


class PairConfig(Strict, OptionValues):
    """A target plus a draft model (run with every sweep.method), or a target with one pinned
    method (``method:``; with the ``draft:`` it needs, if any: see specbench.plan.methods)."""

    target: str
    """The target model: a name under `models:`."""
    draft: str | None = None
    """The draft model (or EAGLE-3 head, DFlash drafter): a name under `models:`."""
    method: Method | None = None
    """Run only this method on the pair (e.g. ngram-mod, draft-mtp), not sweep.method."""
    runs_on: RunnerLabel | None = None  # shards: the CI runner label(s) this pair's cells need
    """Shards: the CI runner label(s) this pair's cells need (wins over runs_on.ngl)."""

    @model_validator(mode="after")
    def _draft_or_method(self) -> PairConfig:
        if self.method is None and self.draft is None:
            raise ValueError("a pair needs `draft` (a model), `method` (e.g. ngram-mod, draft-mtp) or both")
        if self.method is None:
            return self
        if needs_draft_model(self.method) and self.draft is None:
            raise ValueError(
                f"method {self.method} drafts with a model given as `draft:` (a draft model, EAGLE-3 "
                "head or DFlash/DSpark drafter); add draft: MODEL to the pair"
            )
        if self.draft is not None and draft_free(self.method):
            raise ValueError(f"method {self.method} uses no draft model; remove `draft` from the pair")
        return self


class PromptsConfig(Strict):
    """The built-in suite or a JSONL file, optionally filtered."""

    suite: Literal["builtin"] | None = None
    """The built-in suite of 30 prompts (the default when no `file` is given)."""
    file: LocalPath | None = None
    """A JSONL prompts file, one {id, category, messages|text} per line."""
    categories: list[str] | None = Field(default=None, min_length=1)
    """Keep only prompts of these categories."""
    ids: list[str] | None = Field(default=None, min_length=1)
    """Keep only prompts with these ids."""
    limit_per_category: int | None = Field(default=None, ge=1)
    """Keep at most this many prompts of each category."""

    @model_validator(mode="after")
    def _one_source(self) -> PromptsConfig:
        if self.suite is not None and self.file is not None:
            raise ValueError("give either `suite` or `file`, not both")
        if self.suite is None and self.file is None:
            self.suite = "builtin"
        return self


class ContextConfig(Strict):
    """The document the context of a depth is cut from (``sweep.depth``)."""

    file: LocalPath | None = None
    """A UTF-8 text file; unset: the shipped default (the U.S. Constitution, prose, public domain)."""


NUMBER_LISTS = (
    "draft_max", "draft_min", "p_min", "ngl", "ngld", "ngram_size_n", "ngram_size_m", "parallel", "synth_len",
    "depth",
)  # fmt: skip


def _llama_default() -> list[int | None]:
    """One value, null: llama.cpp's own default (a typed factory: ``lambda: [None]`` is list[None])."""
    return [None]


class SweepConfig(Strict, SweepOptions):
    """Lists expanded as a cartesian product (see specbench.plan.sweep for which cells apply where)."""

    method: list[Method] = Field(default_factory=lambda: ["draft"], min_length=1)
    """Speculative methods: any --spec-type of the build, or several joined by `+`."""
    draft_max: list[PositiveInt] = Field(default_factory=lambda: [8], min_length=1)
    """Draft tokens per step (the draft length g)."""
    draft_min: list[NonNegativeInt] = Field(default_factory=lambda: [0], min_length=1)
    """Drafts shorter than this are not verified."""
    p_min: list[Probability] = Field(default_factory=lambda: [DEFAULT_P_MIN], min_length=1)
    """The draft stops at its first token below this probability."""
    ngl: list[NonNegativeInt] = Field(default_factory=lambda: [0], min_length=1)  # target GPU layers
    """Target layers offloaded to the GPU (-ngl)."""
    ngld: list[NonNegativeInt] = Field(default_factory=lambda: [0], min_length=1)  # draft GPU layers
    """Draft layers offloaded to the GPU (-ngld)."""
    # n-gram methods' lookup (n) and draft (m) lengths; null: llama.cpp's default (12 and 48)
    ngram_size_n: list[PositiveInt | None] = Field(default_factory=_llama_default, min_length=1)
    """N-gram methods' lookup length (--spec-<method>-size-n); null: llama.cpp's 12."""
    ngram_size_m: list[PositiveInt | None] = Field(default_factory=_llama_default, min_length=1)
    """N-gram methods' draft length (--spec-<method>-size-m); null: llama.cpp's 48."""
    parallel: list[PositiveInt] = Field(default_factory=lambda: [1], min_length=1)  # requests in flight
    """Requests in flight at once (llama-server slots); above 1 needs runner: server."""
    # synthetic acceptance lengths (server runner; llama-server --spec-synth-len): each draft-model
    # cell also runs once per value with its drafts accepted at random ([]: none)
    synth_len: list[Annotated[float, Field(ge=1.0, allow_inf_nan=False)]] = Field(default_factory=list)
    """Synthetic acceptance lengths (runner: server): draft-model cells run again per value."""
    depth: list[NonNegativeInt] = Field(default_factory=lambda: [0], min_length=1)
    """Tokens of context (the target's tokenizer, from `context.file`) before each prompt: the KV
    cache's depth when generation starts; 0: the prompt alone."""

    @field_validator(*NUMBER_LISTS, mode="before")
    @classmethod
    def _no_bool_items(cls, v: object) -> object:
        """``draft_max: [4, yes]`` is a YAML slip, not draft_max 1 (see refuse_bool_number)."""
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, bool):
                raise ValueError(
                    f"must be a list of numbers, not {str(x).lower()} "
                    "(YAML reads yes/no/on/off/true/false as booleans)"
                )
        return v

    @field_validator("method", *NUMBER_LISTS)
    @classmethod
    def _unique(cls, v: list) -> list:
        dupes = sorted({str(x) for x in v if v.count(x) > 1})
        if dupes:
            raise ValueError(f"lists {', '.join(dupes)} more than once")
        return v

    @model_validator(mode="after")
    def _some_draft_cell(self) -> SweepConfig:
        if min(self.draft_min) > max(self.draft_max):
            raise ValueError("every draft_min is larger than every draft_max; no cell is left")
        return self


class StrictGeneration(Generation):
    """Generation settings as the config may write them (unknown keys refused, ranges checked)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    _no_bool_numbers = field_validator("*", mode="before")(classmethod(refuse_bool_number))

    n_predict: int = Field(default=128, ge=2)  # one token comes from the prompt pass: no decode speed
    """Tokens to generate per run (-n)."""
    temperature: float = Field(default=0.0, ge=0.0)
    """Sampling temperature; at 0 outputs are compared with the baseline's."""
    top_k: int | None = Field(default=None, ge=0)
    """Top-k sampling (unset: llama.cpp's default)."""
    seed: int = 42  # as Generation's; declared here for its description
    """Sampling seed (-s)."""
    threads: int | None = Field(default=None, ge=1)
    """CPU threads (-t; unset: llama.cpp's default)."""
    ctx_size: int = Field(default=2048, ge=0)
    """Context size per sequence (-c)."""

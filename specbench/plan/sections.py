"""The sections of a run config: which llama.cpp, pairs, prompts, the sweep's lists and generation.

Each is strict, and its field docstrings generate the config reference and ``specbench schema``."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from specbench.base.llamaopts import AXES, Count, MethodName
from specbench.base.methods import draft_free, needs_draft_model
from specbench.base.paths import LocalPath, Name
from specbench.plan.options import Arg, OptionValues, Strict, SweepOptions, no_bool, unique_items
from specbench.results.records import Generation

# A config's cmake argument: -DNAME=VALUE or -DNAME:TYPE=VALUE, and the names that run a program or
# cmake code, or write outside the build folder.
_CMAKE_DEFINE = re.compile(r"^-D([A-Za-z_][A-Za-z0-9_]*)(?::[A-Z]+)?=.*$", re.S)
_CMAKE_REACHES_OUT = re.compile(
    r"COMPILER|LAUNCHER|TOOLCHAIN|INCLUDE|OUTPUT_DIRECTORY|OUTPUT_PATH|INSTALL_PREFIX|_EXECUTABLE$|"
    r"^CMAKE_(PROJECT|USER_MAKE_RULES|MODULE_PATH|PREFIX_PATH|FIND_ROOT)",
    re.I,
)


class LlamaCppConfig(Strict):
    """Which llama.cpp to build, as ``specbench build`` takes it; one entry of a list of builds."""

    label: Name | None = None
    """The build's name in samples and reports (the build axis); required in a list."""
    source: LocalPath | None = None
    """A llama.cpp tree or git checkout, relative to the config (unset: the pinned tree)."""
    ref: str | None = Field(default=None, min_length=1)
    """A branch, tag or commit of the `source` checkout, built from a clean export of it."""
    backend: Literal["auto", "cpu", "cuda", "metal"] = "auto"
    """auto: CUDA with nvcc and an NVIDIA GPU, Metal on Apple silicon, else CPU."""
    cmake_args: list[str] = []
    """Extra -DNAME=VALUE cmake arguments (debug and sanitizer builds refused)."""

    @field_validator("cmake_args")
    @classmethod
    def _defines_only(cls, args: list[str]) -> list[str]:
        """A shared config's cmake arguments only set build options: not cmake's own (``-C``, ``-P``),
        nor a variable that runs a program or writes outside the build folder."""
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
    args: list[Arg] = []
    """Extra arguments for every llama.cpp invocation of this build."""

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

    ngl: dict[Count, RunnerLabel] = {}
    """Runner label(s) of the cells whose target runs at this ngl: {0: ubuntu-latest}."""


class PairConfig(OptionValues):
    """A target plus a draft model (run with every sweep.method), or a target with one pinned
    method (``method:``; with the ``draft:`` it needs, if any: see specbench.base.methods)."""

    target: str
    """The target model: a name under `models:`."""
    draft: str | None = None
    """The draft model (or EAGLE-3 head, DFlash drafter): a name under `models:`."""
    method: MethodName | None = None
    """Run only this method on the pair (e.g. ngram-mod, draft-mtp), not sweep.method."""
    runs_on: RunnerLabel | None = None
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


# The axes that take numbers (a boolean among them is a YAML slip).
NUMBER_LISTS = (*(o.key for o in AXES if o.cell_type in (int, float)), "depth")


class SweepConfig(SweepOptions):
    """Lists expanded as a cartesian product (see specbench.plan.sweep for which cells apply where)."""

    depth: list[Count] = Field(default=[0], min_length=1)
    """Tokens of context (the target's tokenizer, from `context.file`) before each prompt: the KV
    cache's depth when generation starts; 0: the prompt alone."""

    @field_validator(*NUMBER_LISTS, mode="before")
    @classmethod
    def _no_bool_items(cls, v: object) -> object:
        """``draft_max: [4, yes]`` is a YAML slip, not draft_max 1."""
        for x in v if isinstance(v, list) else [v]:
            no_bool(x, "a list of numbers")
        return v

    _unique = field_validator(*(o.key for o in AXES), "depth")(classmethod(unique_items))

    @model_validator(mode="after")
    def _some_draft_cell(self) -> SweepConfig:
        for o in AXES:
            if o.at_most and min(getattr(self, o.key)) > max(getattr(self, o.at_most)):
                raise ValueError(f"every {o.key} is larger than every {o.at_most}; no cell is left")
        return self


class StrictGeneration(Strict, Generation):
    """Generation settings as the config may write them (unknown keys refused, ranges checked)."""

    n_predict: int = Field(default=128, ge=2)  # one token comes from the prompt pass
    """Tokens to generate per run (-n)."""
    temperature: float = Field(default=0.0, ge=0.0)
    """Sampling temperature; at 0 outputs are compared with the baseline's."""
    top_k: int | None = Field(default=None, ge=0)
    """Top-k sampling (unset: llama.cpp's default)."""
    seed: int = 42
    """Sampling seed (-s)."""
    threads: int | None = Field(default=None, ge=1)
    """CPU threads (-t; unset: llama.cpp's default)."""
    ctx_size: int = Field(default=2048, ge=0)
    """Context size per sequence (-c)."""

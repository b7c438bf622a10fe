"""The run config: one YAML file says what to build, which models, which prompts, which sweep.

Validated with pydantic (unknown keys are errors everywhere) and reported as one line naming the
YAML location (``config.yaml: sweep.draft_max[2]: must be >= 1``), because a typo found an hour
into a GPU sweep costs the user the night.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from specbench.base.errors import ConfigError
from specbench.models.spec import ModelSpec
from specbench.plan.configtext import apply_override, format_validation_error, parse_yaml
from specbench.plan.methods import draft_free, needs_draft_model, parse_method
from specbench.plan.numbers import refuse_bool_number
from specbench.plan.options import Arg, OptionValues, SweepOptions, check_options
from specbench.plan.prompts import NAME_PATTERN, Prompt, builtin_prompts, load_prompt_file, select
from specbench.results.expect import Expectation
from specbench.results.records import Generation

# A speculative method: a --spec-type name of the build, or several joined by `+` (plan.methods).
Method = Annotated[str, BeforeValidator(parse_method)]

# Passed on every speculative run. The pinned llama.cpp's default (--help: 0.00); older builds
# defaulted to 0.75 or 0.8, so it is always given explicitly to measure the same thing.
DEFAULT_P_MIN = 0.0


PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class _Strict(BaseModel):
    # a field's docstring is its description: the config reference and `specbench schema` show it
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    _no_bool_numbers = field_validator("*", mode="before")(classmethod(refuse_bool_number))


class LlamaCppConfig(_Strict):
    """Which llama.cpp to build, as ``specbench build`` takes it; one entry of a list of builds."""

    label: str | None = Field(default=None, pattern=NAME_PATTERN)  # the build axis (required in a list)
    """The build's name in samples and reports (the build axis); required in a list."""
    source: Path | None = None  # a llama.cpp tree or git checkout; None = the pinned tree
    """A llama.cpp tree or git checkout, relative to the config (unset: the pinned tree)."""
    ref: str | None = Field(default=None, min_length=1)  # a git ref in `source`, built from a clean export
    """A branch, tag or commit of the `source` checkout, built from a clean export of it."""
    backend: Literal["auto", "cpu", "cuda", "metal"] = "auto"
    """auto: CUDA with nvcc and an NVIDIA GPU, Metal on Apple silicon, else CPU."""
    cmake_args: list[str] = Field(default_factory=list)
    """Extra -DNAME=VALUE cmake arguments (debug and sanitizer builds refused)."""
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


class RunsOnConfig(_Strict):
    """Shards: which CI runner (GitHub ``runs-on`` label or labels) a cell needs, by the target's ngl."""

    ngl: dict[NonNegativeInt, RunnerLabel] = Field(default_factory=dict)
    """Runner label(s) of the cells whose target runs at this ngl: {0: ubuntu-latest}."""


class PairConfig(_Strict, OptionValues):
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


class PromptsConfig(_Strict):
    """The built-in suite or a JSONL file, optionally filtered."""

    suite: Literal["builtin"] | None = None
    """The built-in suite of 30 prompts (the default when no `file` is given)."""
    file: Path | None = None
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


NUMBER_LISTS = (
    "draft_max", "draft_min", "p_min", "ngl", "ngld", "ngram_size_n", "ngram_size_m", "parallel", "synth_len",
)  # fmt: skip


class SweepConfig(_Strict, SweepOptions):
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
    ngram_size_n: list[PositiveInt | None] = Field(default_factory=lambda: [None], min_length=1)
    """N-gram methods' lookup length (--spec-<method>-size-n); null: llama.cpp's 12."""
    ngram_size_m: list[PositiveInt | None] = Field(default_factory=lambda: [None], min_length=1)
    """N-gram methods' draft length (--spec-<method>-size-m); null: llama.cpp's 48."""
    parallel: list[PositiveInt] = Field(default_factory=lambda: [1], min_length=1)  # requests in flight
    """Requests in flight at once (llama-server slots); above 1 needs runner: server."""
    # synthetic acceptance lengths (server runner; llama-server --spec-synth-len): each draft-model
    # cell also runs once per value with its drafts accepted at random ([]: none)
    synth_len: list[Annotated[float, Field(ge=1.0, allow_inf_nan=False)]] = Field(default_factory=list)
    """Synthetic acceptance lengths (runner: server): draft-model cells run again per value."""

    @field_validator(*NUMBER_LISTS, mode="before")
    @classmethod
    def _no_bool_items(cls, v: object) -> object:
        """``draft_max: [4, yes]`` is a YAML slip, not draft_max 1 (see specbench.plan.numbers)."""
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


class Config(_Strict, OptionValues):
    """A validated run config. ``base_dir`` is the config file's folder (relative paths resolve there)."""

    name: str = Field(default="run", pattern=NAME_PATTERN)
    """The run's name in its folder (default: the file name)."""
    llama_cpp: LlamaCppField = Field(default_factory=LlamaCppConfig)
    """The llama.cpp build, or a list of labelled builds (A/B)."""
    models: dict[str, ModelSpec] = Field(min_length=1)
    """Models by name, each from exactly one source: hf, path, pypi or derive."""
    pairs: dict[str, PairConfig] = Field(min_length=1)
    """Pairs by name: a target with a draft model, or with one `method:`."""
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)
    """Which prompts: the built-in suite or a JSONL file, filtered."""
    sweep: SweepConfig = Field(default_factory=SweepConfig)
    """Lists of settings, expanded as a cartesian product into cells."""
    generation: Generation = Field(default_factory=Generation)
    """How each invocation generates: tokens, sampling, threads, context."""
    repetitions: int | Literal["auto"] = 3  # auto: repeat until `precision` is met (see execute.adaptive)
    """Repetitions of every run, or `auto`: repeat until `precision` is met."""
    precision: float = Field(default=0.03, gt=0.0, lt=1.0)  # target relative half-width of the 95% CI
    """auto: the 95% CI half-width, relative to the mean, to reach."""
    min_repetitions: int = Field(default=3, ge=2)  # auto: the first round (a CI needs 2)
    """auto: repetitions of the first round."""
    max_repetitions: int = Field(default=10, ge=2)  # auto, and ab/bisect always: the most any cell gets
    """auto (and `ab`/`bisect` whatever `repetitions` says): the most repetitions any cell gets."""
    min_decode_s: float = Field(default=1.0, ge=0.0)  # decode windows shorter than this get a warning
    """A side whose mean decode time is below this gets a warning (seconds)."""
    warmup: int = Field(default=1, ge=0)
    """Warmup runs per binary and model: judged (a failed one drops the cells that need it), not recorded."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Seconds per invocation before its process group is killed."""
    speculative_binary: Literal["speculative-simple", "speculative"] = "speculative-simple"
    """Process runner: llama-speculative-simple, or llama-speculative (tree drafting)."""
    expect: Expectation | None = None  # published figures for this setup, shown by `specbench report`
    """Published figures for this setup, printed by `specbench report` beside the run's."""
    runner: Literal["process", "server"] = "process"  # a process per sample, or a llama-server per setting
    """process: one llama.cpp process per sample; server: one llama-server per setting."""
    runs_on: RunsOnConfig = Field(default_factory=RunsOnConfig)  # shards: runner labels by ngl
    """Shards: CI runner labels for cells, by the target's ngl."""
    workarounds: bool = True  # false: run each build as built, without its self-test's workaround
    """false: run each build as built, without the workaround its self-test found (e.g. repacking off on
    AMX CPUs); `specbench run --no-workarounds` sets it."""
    base_dir: Path = Field(default=Path("."), exclude=True)
    path: Path | None = Field(default=None, exclude=True)  # the config file

    @field_validator("generation", mode="before")
    @classmethod
    def _strict_generation(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return Generation(**StrictGeneration.model_validate(v).model_dump())
        return v

    @field_validator("repetitions", mode="before")
    @classmethod
    def _repetitions(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError(
                f"must be a number, not {str(v).lower()} (YAML reads yes/no/on/off/true/false as booleans)"
            )
        if v != "auto" and (not isinstance(v, int) or v < 1):
            raise ValueError(f"must be a whole number >= 1 or `auto` (got {v!r})")
        return v

    @model_validator(mode="after")
    def _repetition_range(self) -> Config:
        if self.min_repetitions > self.max_repetitions:
            raise ValueError(
                f"min_repetitions ({self.min_repetitions}) is above max_repetitions "
                f"({self.max_repetitions}); raise max_repetitions or lower min_repetitions"
            )
        return self

    @field_validator("llama_cpp")
    @classmethod
    def _labelled_builds(cls, v: LlamaCppConfig | list[LlamaCppConfig]) -> Any:
        """A list of builds is an axis: each needs a label of its own."""
        if not isinstance(v, list):
            return v
        if not v:
            raise ValueError("must list at least one build (or be one mapping: source, ref, backend, ...)")
        seen: dict[str, int] = {}
        for i, build in enumerate(v):
            if build.label is None:
                raise ValueError(
                    f"build {i + 1} of {len(v)} has no label; in a list every build needs one "
                    "(e.g. label: base, label: head)"
                )
            if build.label in seen:
                raise ValueError(
                    f"builds {seen[build.label] + 1} and {i + 1} are both labelled {build.label!r}; "
                    "give each build its own label"
                )
            seen[build.label] = i
        return v

    @property
    def builds(self) -> list[LlamaCppConfig]:
        """The llama.cpp builds of this run, in the config's order (one, unlabelled, for a mapping)."""
        return list(self.llama_cpp) if isinstance(self.llama_cpp, list) else [self.llama_cpp]

    @property
    def build_labels(self) -> list[str | None]:
        """The values of the samples' ``build`` axis: the labels, or [None] for one unlabelled build."""
        return [b.label for b in self.builds]

    @property
    def auto_repetitions(self) -> bool:
        return self.repetitions == "auto"

    @property
    def first_repetitions(self) -> int:
        """Repetitions of the first (with a fixed count: the only) round."""
        return self.min_repetitions if self.repetitions == "auto" else int(self.repetitions)

    @property
    def most_repetitions(self) -> int:
        """The most a cell gets in rounds (``repetitions: auto``; ``ab`` and ``bisect`` always):
        ``max_repetitions``, or a fixed ``repetitions`` above it (the first round is never cut)."""
        return max(self.first_repetitions, self.max_repetitions)

    @field_validator("models", "pairs")
    @classmethod
    def _names(cls, v: dict) -> dict:
        for name in v:
            if not re.match(NAME_PATTERN, str(name)):
                raise ValueError(f"name {name!r} may use only letters, digits, '.', '_' and '-'")
        return v

    @model_validator(mode="after")
    def _parallel_needs_server(self) -> Config:
        if self.runner == "process" and max(self.sweep.parallel) > 1:
            raise ValueError(
                "sweep.parallel: values above 1 need `runner: server` (the process runner runs one "
                "request at a time); set runner: server or use parallel: [1]"
            )
        return self

    @model_validator(mode="after")
    def _synth_needs_server(self) -> Config:
        if self.runner == "process" and self.sweep.synth_len:
            raise ValueError(
                "sweep.synth_len: synthetic acceptance needs `runner: server` (only llama-server and "
                "llama-cli take --spec-synth-len, not llama-speculative-simple); set runner: server "
                "or drop sweep.synth_len"
            )
        return self

    @model_validator(mode="after")
    def _options(self) -> Config:
        check_options(self)
        return self

    @property
    def speculative_role(self) -> str:
        """The BuildInfo role of the speculative binary this config asks for."""
        return "speculative_simple" if self.speculative_binary == "speculative-simple" else "speculative"

    def dump(self) -> dict:
        """The config as plain JSON data in the YAML's own spelling (for the run manifest)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def targets(self) -> list[str]:
        """Target model names in pair order, each once."""
        return list(dict.fromkeys(p.target for p in self.pairs.values()))

    def prompt_list(self) -> list[Prompt]:
        """The selected prompts (the built-in suite or the config's JSONL file, filtered)."""
        if self.prompts.file is not None:
            path = _resolve(self.base_dir, self.prompts.file)
            prompts, origin = load_prompt_file(path), str(path)
        else:
            prompts, origin = builtin_prompts(), "the built-in suite"
        p = self.prompts
        return select(prompts, p.categories, p.ids, p.limit_per_category, origin)


def _resolve(base: Path, p: Path | str) -> Path:
    p = Path(p).expanduser()
    return p if p.is_absolute() else base / p


def _check_references(cfg: Config, origin: str, overridden: set[str] = frozenset()) -> None:
    """Names that must point at other entries of the config, and paths that must exist."""
    known = ", ".join(cfg.models)
    for name, spec in cfg.models.items():
        if spec.derive is not None and spec.derive.from_ not in cfg.models:
            raise ConfigError(
                f"{origin}: models.{name}.derive.from: unknown model {spec.derive.from_!r} (models: {known})"
            )
        if spec.derive is not None and spec.derive.from_ == name:
            raise ConfigError(f"{origin}: models.{name}.derive.from: a model cannot derive from itself")
        if spec.path is not None and not (where := _resolve(cfg.base_dir, spec.path)).is_file():
            what = "is a folder, not a GGUF file" if where.is_dir() else "does not exist"
            raise ConfigError(
                f"{origin}: models.{name}.path: {where} {what} "
                "(relative paths start at the config file's folder)"
            )
    for name, pair in cfg.pairs.items():
        for role in ("target", "draft"):
            model = getattr(pair, role)
            if model is not None and model not in cfg.models:
                raise ConfigError(f"{origin}: pairs.{name}.{role}: unknown model {model!r} (models: {known})")
        if pair.draft is not None and pair.draft == pair.target:
            raise ConfigError(
                f"{origin}: pairs.{name}: the draft is the target itself; pick a smaller draft model"
            )
    _check_builds(cfg, origin)
    if cfg.prompts.file is not None and not (where := _resolve(cfg.base_dir, cfg.prompts.file)).is_file():
        what = "is a folder, not a prompts file" if where.is_dir() else "does not exist"
        raise ConfigError(
            f"{origin}: prompts.file: {where} {what} (relative paths start at the config file's folder)"
        )
    try:
        cfg.prompt_list()
    except ConfigError as exc:  # blamed on the --set that chose the prompts, if one did
        sources = sorted(k for k in overridden if k == "prompts" or k.startswith("prompts."))
        raise ConfigError(f"{', '.join(f'--set {k}' for k in sources) or origin}: {exc}") from exc


def _check_builds(cfg: Config, origin: str) -> None:
    """Every build's source is a folder; a ref names a commit of a git checkout (asked of git, which
    reads and changes nothing), so a typo fails before the first build, not after it."""
    from specbench.base.errors import BuildError
    from specbench.builder.gitref import resolve_ref
    from specbench.builder.source import pinned_checkout

    many = isinstance(cfg.llama_cpp, list)
    for i, build in enumerate(cfg.builds):
        where = f"llama_cpp[{i}]" if many else "llama_cpp"
        source = _resolve(cfg.base_dir, build.source) if build.source is not None else None
        if source is not None and not source.is_dir():
            raise ConfigError(
                f"{origin}: {where}.source: {source} is not a folder "
                "(a llama.cpp checkout; relative paths start at the config file's folder)"
            )
        if build.ref is None:
            continue
        source = source or pinned_checkout()
        if source is None:
            raise ConfigError(
                f"{origin}: {where}.ref: a ref needs a `source` git checkout (the pinned tree here is no "
                f"git checkout); add source: /path/to/llama.cpp, or drop ref"
            )
        try:
            resolve_ref(source, build.ref)
        except BuildError as exc:
            raise ConfigError(f"{origin}: {where}.ref: {exc}") from exc


def config_from_mapping(
    data: dict, base_dir: Path, origin: str, overridden: set[str] = frozenset()
) -> Config:
    """Validate a raw mapping (already parsed and overridden) into a Config."""
    for reserved in ("base_dir", "path"):
        if reserved in data:
            raise ConfigError(f"{origin}: {reserved}: unknown key")
    try:
        cfg = Config.model_validate({**data, "base_dir": base_dir})
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, origin, overridden)) from exc
    for build in cfg.builds:
        if build.source is not None:
            build.source = _resolve(base_dir, build.source)
    if cfg.prompts.file is not None:
        cfg.prompts.file = _resolve(base_dir, cfg.prompts.file)
    _check_references(cfg, origin, overridden)
    return cfg


def load_config(path: Path | str, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read, override (``--set``) and validate a config file; every problem is a one-line ConfigError."""
    path = Path(path)
    origin = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not YAML
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path} does not exist; see configs/ for examples") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"{path} is a folder; pass a config file such as configs/quickstart.yaml") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    data = parse_yaml(text, origin)
    overridden = {apply_override(data, o) for o in overrides}
    cfg = config_from_mapping(data, path.resolve().parent, origin, overridden)
    if "name" not in data:
        cfg.name = path.stem if _valid_name(path.stem) else cfg.name
    cfg.path = path.resolve()
    return cfg


def _valid_name(name: str) -> bool:
    return re.match(NAME_PATTERN, name) is not None

"""The run config: one YAML file says what to build, which models, which prompts, which sweep.

Strict (unknown keys are errors) and reported as one line naming the YAML location, because a typo
found an hour into a GPU sweep costs the user the night."""

from __future__ import annotations

import contextlib
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from specbench.base.errors import BuildError, ConfigError, PathError
from specbench.base.llamaopts import AXES
from specbench.base.paths import Name, UnsafePath, check_name, check_path
from specbench.models.spec import ModelSpec
from specbench.plan.configtext import apply_override, format_validation_error, parse_yaml, refuse_unpassable
from specbench.plan.options import OptionValues, check_options
from specbench.plan.prompts import Prompt, builtin_prompts, load_prompt_file, select
from specbench.plan.sections import (
    ContextConfig,
    LlamaCppConfig,
    LlamaCppField,
    PairConfig,
    PromptsConfig,
    RunsOnConfig,
    StrictGeneration,
    SweepConfig,
    no_bool,
)
from specbench.results.manifest import Expectation
from specbench.results.records import Generation

BUDGET_REPETITIONS = 100  # `ab`/`bisect --budget` without max_repetitions: a cell's most (round_limit)
# The most repetitions a config may ask for: a mean is as precise as it gets long before.
MAX_REPETITIONS = 1000


class Config(OptionValues):
    """A validated run config. ``base_dir`` is the config file's folder (relative paths resolve there)."""

    name: Name = "run"
    """The run's name in its folder (default: the file name)."""
    llama_cpp: LlamaCppField = Field(default_factory=LlamaCppConfig)
    """The llama.cpp build, or a list of labelled builds (A/B)."""
    models: dict[Name, ModelSpec] = Field(min_length=1)
    """Models by name, each from exactly one source: hf, path, pypi or derive."""
    pairs: dict[Name, PairConfig] = Field(min_length=1)
    """Pairs by name: a target with a draft model, or with one `method:`."""
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)
    """Which prompts: the built-in suite or a JSONL file, filtered."""
    sweep: SweepConfig = Field(default_factory=SweepConfig)
    """Lists of settings, expanded as a cartesian product into cells."""
    context: ContextConfig = Field(default_factory=ContextConfig)
    """The document each sample's context of `sweep.depth` tokens is cut from."""
    generation: Generation = Field(default_factory=Generation)
    """How each invocation generates: tokens, sampling, threads, context."""
    repetitions: int | Literal["auto"] = 3
    """Repetitions of every run, or `auto`: repeat until `precision` is met."""
    precision: float = Field(default=0.03, gt=0.0, lt=1.0)
    """auto: the 95% CI half-width, relative to the mean, to reach."""
    min_repetitions: int = Field(default=3, ge=2, le=MAX_REPETITIONS)
    """auto: repetitions of the first round."""
    max_repetitions: int = Field(default=10, ge=2, le=MAX_REPETITIONS)
    """auto (and `ab`/`bisect` whatever `repetitions` says): the most repetitions any cell gets."""
    min_decode_s: float = Field(default=1.0, ge=0.0)
    """A side whose mean decode time is below this gets a warning (seconds)."""
    warmup: int = Field(default=1, ge=0)
    """Warmup runs per binary and model: judged (a failed one drops the cells that need it), not recorded."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Seconds per invocation before its process group is killed."""
    speculative_binary: Literal["auto", "speculative-simple", "speculative"] = "auto"
    """Process runner: llama-speculative-simple, llama-speculative (tree drafting), or auto: the
    first of the two the build's tree has."""
    expect: Expectation | None = None
    """Published figures for this setup, printed by `specbench report` beside the run's."""
    runner: Literal["process", "server"] = "process"
    """process: one llama.cpp process per sample; server: one llama-server per setting."""
    pairing: Literal["auto", "sequential", "duet"] = "auto"  # specbench.plan.pairing
    """Several builds (ab, bisect): a pair's builds one after the other (sequential), or at the same time
    on halves of the CPUs (duet, CPU backends); auto: duet where it can run, else sequential."""
    runs_on: RunsOnConfig = Field(default_factory=RunsOnConfig)
    """Shards: CI runner labels for cells, by the target's ngl."""
    sentinel: bool = True  # specbench.machine.speed.Sentinel
    """false: skip the speed sentinel (two or more short baseline runs of the first target that watch the
    machine's own speed); the run then cannot see a host that slows by itself, and says so."""
    workarounds: bool = True
    """false: run each build as built, without the workaround its self-test found (e.g. repacking off on
    AMX CPUs); `specbench run --no-workarounds` sets it."""
    base_dir: Path = Field(default=Path("."), exclude=True)
    path: Path | None = Field(default=None, exclude=True)  # the config file

    @field_validator("generation", mode="before")
    @classmethod
    def _strict_generation(cls, v: Any) -> Any:
        return Generation(**StrictGeneration.model_validate(v).model_dump()) if isinstance(v, dict) else v

    @field_validator("repetitions", mode="before")
    @classmethod
    def _repetitions(cls, v: Any) -> Any:
        no_bool(v)
        if v != "auto" and (not isinstance(v, int) or v < 1):
            raise ValueError(f"must be a whole number >= 1 or `auto` (got {v!r})")
        if isinstance(v, int) and v > MAX_REPETITIONS:
            raise ValueError(
                f"must be at most {MAX_REPETITIONS} (got {v}); `repetitions: auto` repeats until the "
                "precision is met"
            )
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
        labels = [b.label for b in v]
        for i, label in enumerate(labels):
            if label is None:
                raise ValueError(
                    f"build {i + 1} of {len(v)} has no label; in a list every build needs one "
                    "(e.g. label: base, label: head)"
                )
            if label in labels[:i]:
                raise ValueError(
                    f"builds {labels.index(label) + 1} and {i + 1} are both labelled {label!r}; "
                    "give each build its own label"
                )
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

    def round_limit(self, budget: bool) -> int:
        """``most_repetitions``, except under ``--budget`` with ``max_repetitions`` not set: whoever
        gives ten minutes means ten minutes, so the budget is the limit (up to ``BUDGET_REPETITIONS``)."""
        if budget and "max_repetitions" not in self.model_fields_set:
            return max(self.most_repetitions, BUDGET_REPETITIONS)
        return self.most_repetitions

    @model_validator(mode="after")
    def _runner_takes_it(self) -> Config:
        """What only llama-server takes (its axes; ``synth_rates``, never beside a synthetic length)
        and what the server runner cannot do (duet)."""
        for o in AXES:
            wanted, default = getattr(self.sweep, o.key), list(o.sweep)
            if o.group == "server" and self.runner == "process" and wanted != default:
                raise ValueError(
                    f"sweep.{o.key}: values other than {default} need `runner: server` ({o.spellings[0]} is "
                    f"llama-server's; the process runner's binaries lack it); set runner: server or use "
                    f"{o.key}: {default}"
                )
        if self.runner == "server" and self.pairing == "duet":
            raise ValueError(
                "pairing: duet runs a pair's two processes at once; the server runner keeps one server "
                "per build resident: set pairing: sequential (or auto), or runner: process"
            )
        pinned = any(p.synth_rates is not None for p in self.pairs.values())
        rates = pinned or self.synth_rates is not None or bool(self.sweep.synth_rates)
        if rates and self.sweep.synth_len:
            raise ValueError(
                "synth_rates and sweep.synth_len both set: llama.cpp takes synthetic acceptance as a "
                "mean length or as rates by position, not both; drop one"
            )
        if rates and self.runner == "process":
            raise ValueError(
                "synth_rates: synthetic acceptance needs `runner: server` (only llama-server and "
                "llama-cli take --spec-synth-rates, not llama-speculative-simple); set runner: server "
                "or drop synth_rates"
            )
        return self

    @model_validator(mode="after")
    def _options(self) -> Config:
        check_options(self)
        return self

    @property
    def speculative_role(self) -> str | None:
        """The BuildInfo role of the speculative binary asked for (its name in underscores); None: auto."""
        return None if self.speculative_binary == "auto" else self.speculative_binary.replace("-", "_")

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


def _check_references(cfg: Config, origin: str, overridden: AbstractSet[str] = frozenset()) -> None:
    """Names that must point at other entries of the config, and paths that must exist."""
    known, base = ", ".join(cfg.models), cfg.base_dir
    for name, spec in cfg.models.items():
        if spec.derive is not None and spec.derive.from_ not in cfg.models:
            raise ConfigError(
                f"{origin}: models.{name}.derive.from: unknown model {spec.derive.from_!r} (models: {known})"
            )
        if spec.derive is not None and spec.derive.from_ == name:
            raise ConfigError(f"{origin}: models.{name}.derive.from: a model cannot derive from itself")
        if spec.path is not None:
            _need_file(origin, f"models.{name}.path", _resolve(base, spec.path), "a GGUF file")
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
    if cfg.prompts.file is not None:
        _need_file(origin, "prompts.file", cfg.prompts.file, "a prompts file")
    if cfg.context.file is not None:
        try:
            check_path(cfg.context.file, "context.file")
        except PathError as exc:
            raise ConfigError(f"{origin}: {exc}") from exc
        _need_file(origin, "context.file", cfg.context.file, "a text file")
    try:
        cfg.prompt_list()
    except ConfigError as exc:  # blamed on the --set that chose the prompts, if one did
        sources = sorted(k for k in overridden if k == "prompts" or k.startswith("prompts."))
        raise ConfigError(f"{', '.join(f'--set {k}' for k in sources) or origin}: {exc}") from exc


def _need_file(origin: str, key: str, where: Path, kind: str) -> None:
    """A file the config names is there (a folder is not ``kind``)."""
    if not where.is_file():
        what = f"is a folder, not {kind}" if where.is_dir() else "does not exist"
        raise ConfigError(
            f"{origin}: {key}: {where} {what} (relative paths start at the config file's folder)"
        )


def _check_builds(cfg: Config, origin: str) -> None:
    """Every build's source is a folder and its ref a commit, so a typo fails before any build."""
    from specbench.builder.gitref import resolve_ref
    from specbench.builder.source import pinned_checkout

    many = isinstance(cfg.llama_cpp, list)
    for i, build in enumerate(cfg.builds):
        where = f"llama_cpp[{i}]" if many else "llama_cpp"
        if build.source is not None and not build.source.is_dir():  # resolved by config_from_mapping
            raise ConfigError(
                f"{origin}: {where}.source: {build.source} is not a folder "
                "(a llama.cpp checkout; relative paths start at the config file's folder)"
            )
        if build.ref is None:
            continue
        source = build.source or pinned_checkout()
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
    data: dict, base_dir: Path, origin: str, overridden: AbstractSet[str] = frozenset()
) -> Config:
    """Validate a raw mapping (already parsed and overridden) into a Config."""
    _check_passable(data, "", origin)
    for reserved in ("base_dir", "path"):
        if reserved in data:
            raise ConfigError(f"{origin}: {reserved}: unknown key")
    try:
        cfg = Config.model_validate({**data, "base_dir": base_dir})
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, origin, overridden, Config)) from exc
    for build in cfg.builds:
        if build.source is not None:
            build.source = _resolve(base_dir, build.source)
    if cfg.prompts.file is not None:
        cfg.prompts.file = _resolve(base_dir, cfg.prompts.file)
    if cfg.context.file is not None:
        cfg.context.file = _resolve(base_dir, cfg.context.file)
    _check_references(cfg, origin, overridden)
    return cfg


def _check_passable(node: Any, key: str, origin: str) -> None:
    """Refuse a text no command line or request can carry here, naming its key, not mid-run."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, value in items:
        path = f"{key}.{k}" if key else str(k)
        for text in (k, value):
            if isinstance(text, str):
                refuse_unpassable(text, f"{origin}: {path}:")
        _check_passable(value, path, origin)


def load_config(path: Path | str, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read, override (``--set``) and validate a config file, or the shipped config it names."""
    from specbench.plan.shipped import names_text, resolve_config

    path = resolve_config(Path(path))
    origin = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not YAML
    except FileNotFoundError as exc:
        raise ConfigError(
            f"config file {path} does not exist; name a file, or a shipped config ({names_text()}; "
            "`specbench configs list`)"
        ) from exc
    except IsADirectoryError as exc:
        raise ConfigError(
            f"{path} is a folder; pass a config file, or a shipped config such as quickstart"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    data = parse_yaml(text, origin)
    overridden = {apply_override(data, o) for o in overrides}
    cfg = config_from_mapping(data, path.resolve().parent, origin, overridden)
    if "name" not in data:
        with contextlib.suppress(UnsafePath):  # a file name that is no name keeps the default
            cfg.name = check_name(path.stem)
    cfg.path = path.resolve()
    return cfg


# The config's JSON Schema comes from the models that validate it, so an editor checks a config the
# way `specbench run` would (refusals only the validator can make stay outside it).
class _SchemaConfig(Config):
    """Config as a file may write it: generation settings checked as the loader checks them, and the
    loader's own fields (the file's folder and path) left out."""

    model_config = ConfigDict(title="specbench run config")

    generation: StrictGeneration = Field(default_factory=StrictGeneration)
    """How each invocation generates: tokens, sampling, threads, context."""
    base_dir: SkipJsonSchema[Path] = Field(default=Path("."), exclude=True)
    path: SkipJsonSchema[Path | None] = Field(default=None, exclude=True)


def config_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a run config file (``specbench schema``)."""
    schema = _SchemaConfig.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}

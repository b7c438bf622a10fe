"""The manifest: what a run measured and on what, so its numbers can be trusted and reproduced.

``Manifest`` is what the runner writes (strict); ``RunFacts`` what readers take from any stored one
(tolerant), and ``CellKey`` how they match a measurement across runs. No secrets: the config is data,
the command line the one typed. ``Expectation`` is here, below the config that reads it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from specbench import __version__
from specbench.base.formats import now_iso
from specbench.builder.buildinfo import BuildInfo
from specbench.machine import envinfo
from specbench.machine.envinfo import EnvInfo
from specbench.machine.noise import NoiseRecord
from specbench.machine.speed import SpeedRecord
from specbench.models.paircheck import PairCheck
from specbench.models.spec import ResolvedModel
from specbench.results import cell
from specbench.results.cell import LeftOut
from specbench.results.records import Sample

Figure = float | str


# ``expect:``: what someone published for the setup a config reproduces, printed by the report beside
# what this machine measured (numbers or text: published figures are often ranges). No class docstring:
# it would become the schema's description.
class Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)  # docstrings describe fields

    source: str | None = None
    """Who measured it, on what, where it was published."""
    speedup: Figure | None = None
    """Speculative over plain decoding: 1.28 or text ("1.5-1.8x")."""
    acceptance: Figure | None = None
    """A fraction (0.65) or text ("61-72%")."""
    baseline_tps: Figure | None = None
    """Plain decoding, tokens/s."""
    spec_tps: Figure | None = None
    """Speculative decoding, tokens/s."""
    note: str | None = None
    """Anything else (e.g. a time instead of a rate)."""


Status = Literal["running", "complete", "interrupted", "failed"]

# The run folder's format: raise it when an older specbench would misread a folder (not for a new
# optional field), so it refuses the folder instead; unnumbered folders are format 0. Format 2
# (``SAME_SPAN_FORMAT``): a baseline's `tps` is timed over the speculative span (docs/timing.md).
FORMAT_VERSION = 2
SAME_SPAN_FORMAT = 2


# "i/N": merge names a shard's folder after it, so a manifest may say nothing else
ShardLabel = Annotated[str, Field(pattern=r"^[1-9][0-9]{0,8}/[1-9][0-9]{0,8}$")]


class MergedShard(BaseModel):
    """One shard folder a merged run was made from (its whole manifest is kept beside it)."""

    shard: ShardLabel
    run_id: str
    hostname: str | None = None
    status: str
    n_samples: int


class Manifest(BaseModel):
    format_version: int = FORMAT_VERSION
    run_id: str
    name: str
    specbench_version: str = __version__
    started_at: str = Field(default_factory=now_iso)
    finished_at: str | None = None
    status: Status = "running"
    status_reason: str | None = None  # why a run failed (the one-line error)
    config_path: str | None = None
    config: dict[str, Any]  # the resolved config, as data
    build: BuildInfo  # the run's one build, or the first of several
    builds: dict[str, BuildInfo] = Field(default_factory=dict)  # every build of a multi-build run, by label
    env: EnvInfo
    models: dict[str, ResolvedModel]
    pair_checks: dict[str, PairCheck] = Field(default_factory=dict)  # by pair name (draft pairs)
    plan_size: int = 0  # invocations in the plan, warmups included
    n_samples_planned: int = 0  # recorded samples the plan will produce (warmups excluded)
    resumed_at: list[str] = Field(default_factory=list)  # one entry per --resume
    runner: str = "process"  # process | server
    pairing: str = "sequential"  # several builds: sequential | duet (specbench.plan.pairing)
    model_loads: int = 0  # llama.cpp processes started that loaded a model (warmups included, all sessions)
    command_line: list[str] = Field(default_factory=list)
    noise: NoiseRecord = Field(default_factory=NoiseRecord)  # the system-noise check (older runs: empty)
    other_machines: list[str] = Field(default_factory=list)  # per `--resume --force` elsewhere: what differed
    shard: ShardLabel | None = None  # a sharded sweep's "i/N", its cells, and the whole plan's
    shard_cells: list[str] = Field(default_factory=list)
    plan_cells: list[str] = Field(default_factory=list)
    plan_id: str | None = None  # the whole plan's config hash: shards of other configs do not merge
    merged_from: list[MergedShard] = Field(default_factory=list)  # `specbench merge`: the shards it took
    cells: list[dict[str, Any]] = Field(default_factory=list)  # every planned cell (``cell_record``)
    left_out: list[LeftOut] = Field(default_factory=list)  # planned cells not run, with why

    def mark_finished(self, status: Status, reason: str | None = None) -> None:
        self.status = status
        self.status_reason = reason
        self.finished_at = now_iso()


def machine_differences(then: EnvInfo, now: EnvInfo) -> list[str]:
    """How the run's machine differs from this one in hostname, CPU model or GPUs (as pyperf refuses
    to merge runs whose metadata differs); a fact one side lacks is not compared."""
    gpus_then = ", ".join(sorted(g.name for g in then.gpus)) or "none"
    gpus_now = ", ".join(sorted(g.name for g in now.gpus)) or "none"
    checked = (
        ("hostname", then.hostname, now.hostname),
        ("CPU", then.cpu_model, now.cpu_model),
        ("GPUs", gpus_then, gpus_now),
    )
    return [f"{what} {a}, here {b}" for what, a, b in checked if a and b and a != b]


class MachineFacts(BaseModel):
    """What a measurement ran on, as far as it defines the numbers (driver is shown, not matched)."""

    cpu_model: str | None = None
    gpus: list[str] = Field(default_factory=list)  # GPU model names
    backend: str | None = None  # cpu | cuda | metal ...

    @classmethod
    def here(cls, backend: str | None) -> MachineFacts:
        """This machine as a run's manifest will describe it (history is matched on ``describe()``)."""
        return cls(cpu_model=envinfo.cpu_model(), gpus=[g.name for g in envinfo.gpus()], backend=backend)

    def describe(self) -> str:
        gpu = ", ".join(self.gpus) if self.gpus else "no GPU"
        return f"{self.cpu_model or 'unknown CPU'} / {gpu} / {self.backend or 'unknown backend'}"


class RunFacts(BaseModel):
    """A stored run's manifest as its readers need it, read tolerantly: a missing part only weakens
    matching or captions."""

    run_id: str
    started_at: str | None = None
    status: str | None = None  # complete | interrupted | failed | running (as the manifest says)
    status_reason: str | None = None
    models: dict[str, str | None] = Field(default_factory=dict)  # model name -> sha256
    machine: MachineFacts = Field(default_factory=MachineFacts)
    llama_cpp_commit: str | None = None
    drivers: list[str] = Field(default_factory=list)
    os: str | None = None
    specbench_version: str | None = None
    expect: Expectation | None = None  # the config's published figures
    auto_repetitions: bool = False  # config `repetitions: auto` (precision_met is judged only then)
    precision: float | None = None  # config `precision`
    min_decode_s: float | None = None  # config `min_decode_s`
    busy: list[str] = Field(default_factory=list)  # the noise check's reasons the machine was busy
    noise_notes: list[str] = Field(default_factory=list)  # its notes (an unsteady governor, pairs re-run)
    speed: SpeedRecord = Field(default_factory=SpeedRecord)  # the speed sentinel (older runs: empty)
    other_machines: list[str] = Field(default_factory=list)  # forced resumes elsewhere: what differed
    shard_machines: dict[str, str] = Field(default_factory=dict)  # merged shards: shard -> hostname
    workarounds: list[str] = Field(default_factory=list)  # from the self-test: ``repack-off: --no-repack``
    env_vars: dict[str, str] = Field(default_factory=dict)  # LLAMA_ARG_*, GGML_*... as the binaries saw them
    # what a baseline's t/s times (docs/timing.md): "same-span" (format 2 on, or a server run) or
    # "decode-only" (older process runs, and a baseline file without it)
    timing: str = "decode-only"
    pairing: str = "sequential"  # several builds: a pair one after the other, or at once (duet)
    left_out: list[LeftOut] = Field(default_factory=list)  # planned cells not run, and why

    def model_id(self, name: str | None) -> str | None:
        """A model's identity for matching: its sha256, or ``name:NAME`` when the sha is unknown."""
        if name is None:
            return None
        sha = self.models.get(name)
        return sha if sha else f"name:{name}"

    @property
    def run_key(self) -> str:
        """history's run key: the same run wherever its folder lies now."""
        return f"{self.run_id}@{self.started_at or ''}"


def _value(data: object, *keys: str) -> Any:
    """A nested value, or None where a level is missing."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def facts_from_manifest(manifest: dict, fallback_id: str) -> RunFacts:
    """The facts of a stored manifest as loaded, whatever parts it lacks."""
    raw_models = manifest.get("models") or {}
    if isinstance(raw_models, list):
        raw_models = {m.get("name"): m for m in raw_models if isinstance(m, dict)}
    models = {str(k): (v.get("sha256") if isinstance(v, dict) else None) for k, v in raw_models.items()}
    env = manifest.get("env")
    if not isinstance(env, dict):
        env = {}
    gpus = env.get("gpus") or []
    version = manifest.get("format_version", 0)
    same_span = isinstance(version, int) and version >= SAME_SPAN_FORMAT or manifest.get("runner") == "server"
    return RunFacts(
        run_id=str(manifest.get("run_id") or fallback_id),
        started_at=_str(manifest.get("started_at")),
        status=_str(manifest.get("status")),
        status_reason=_str(manifest.get("status_reason")),
        models=models,
        machine=MachineFacts(
            cpu_model=env.get("cpu_model"),
            gpus=[g.get("name") for g in gpus if isinstance(g, dict) and g.get("name")],
            backend=_value(manifest, "build", "backend") or env.get("backend"),
        ),
        llama_cpp_commit=_value(manifest, "build", "commit"),
        drivers=sorted({g.get("driver") for g in gpus if isinstance(g, dict) and g.get("driver")}),
        os=env.get("os"),
        specbench_version=manifest.get("specbench_version") or env.get("specbench_version"),
        expect=_read(Expectation, _value(manifest, "config", "expect")),
        auto_repetitions=_value(manifest, "config", "repetitions") == "auto",
        precision=_number(_value(manifest, "config", "precision")),
        min_decode_s=_number(_value(manifest, "config", "min_decode_s")),
        busy=[b for b in (_value(manifest, "noise", "busy") or []) if isinstance(b, str)],
        noise_notes=[n for n in (_value(manifest, "noise", "notes") or []) if isinstance(n, str)],
        speed=_read(SpeedRecord, _value(manifest, "noise", "speed")) or SpeedRecord(),
        other_machines=[m for m in (manifest.get("other_machines") or []) if isinstance(m, str)],
        shard_machines=_shard_machines(manifest),
        workarounds=_workarounds(manifest),
        env_vars={str(k): str(v) for k, v in (env.get("variables") or {}).items()},
        timing="same-span" if same_span else "decode-only",
        pairing=_str(manifest.get("pairing")) or "sequential",
        left_out=_left_out(manifest.get("left_out")),
    )


def _left_out(data: object) -> list[LeftOut]:
    """The cells the plan left out that read as such (a hand-edited entry is skipped)."""
    return [c for e in (data if isinstance(data, list) else []) if (c := _read(LeftOut, e)) is not None]


def _workarounds(manifest: dict) -> list[str]:
    """``name: flag`` of each build's workaround that was on (self-test record, not turned off)."""
    builds = [manifest.get("build"), *((manifest.get("builds") or {}).values())]
    found = set()
    for b in builds:
        wa = _value(b, "selftest", "workaround")
        if isinstance(wa, dict) and not (isinstance(b, dict) and b.get("workarounds_off")):
            found.add(f"{wa.get('name')}: {wa.get('flag')}")
    return sorted(found)


def _shard_machines(manifest: dict) -> dict[str, str]:
    """Which machine measured each shard of a merged run (or the one shard a shard run is)."""
    merged = manifest.get("merged_from")
    if not isinstance(merged, list):
        merged = []
    found = {str(m.get("shard")): str(m.get("hostname") or "?") for m in merged if isinstance(m, dict)}
    if not found and isinstance(manifest.get("shard"), str):
        found[manifest["shard"]] = str(_value(manifest, "env", "hostname") or "?")
    return found


# What makes two measurements the same measurement across runs (compare's match, history's series):
# role, models by sha256 (a renamed file matches, a re-quantized one does not), every other axis but
# the pair name, the prompt and the generation settings. Made at import: the type checker sees Any.
_Axes: Any = cell.model_with_cell(
    "_Axes", "Every axis but the pair, models as ids.", {"model": "target"}, cell.RUN_LOCAL
)


class CellKey(_Axes):
    """What defines a measurement; equal keys on both sides are compared."""

    model_config = ConfigDict(frozen=True)

    role: str  # target and draft (from the axes) hold sha256 ids (or name:NAME when unknown)
    prompt_id: str
    n_predict: int
    temperature: float
    top_k: int | None
    seed: int
    ctx_size: int


# The generation settings in a cell's key, in its order (a run's threads are how it ran, not what)
KEY_GENERATION = ("n_predict", "temperature", "top_k", "seed", "ctx_size")


def cell_key(s: Sample, facts: RunFacts) -> CellKey:
    axes = {f: getattr(s, f) for f in cell.CELL_FIELDS if f not in (*cell.RUN_LOCAL, *cell.MODEL_FIELDS)}
    return CellKey(
        role=s.role, target=facts.model_id(s.model), draft=facts.model_id(s.draft), **axes,
        prompt_id=s.prompt_id, **s.generation.model_dump(include=set(KEY_GENERATION)),
    )  # fmt: skip


Part = TypeVar("Part", bound=BaseModel)


def _read(model: type[Part], data: object) -> Part | None:
    """``data`` as ``model``, or None where it is missing or unreadable (an older, later or
    hand-edited run: a caption is not worth refusing the run)."""
    try:
        return model.model_validate(data) if isinstance(data, dict) else None
    except ValidationError:
        return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

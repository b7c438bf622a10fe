"""What ``specbench run`` decides before anything runs: config -> build -> models -> pair checks ->
prompts -> plan, as one ``Prepared`` (or, dry, a preview of it with nothing built or fetched).

Everything that can refuse a run (config, build, models, incompatible pairs) is checked here,
before the first llama.cpp invocation, so a bad sweep fails in seconds, not an hour in. Every build
of a run (one, or labelled builds measured side by side) is made or found cached first, so one that
fails to compile stops the run with the compiler's first error line before another is measured alone.

A prompt at depth D has a context of exactly D tokens in front, counted by the target's own
tokenizer as llama.cpp runs it: a llama-server of the build, started once per target, is asked
``/tokenize`` and ``/detokenize`` (the builds have no ``llama-tokenize``, and a Python tokenizer
would drift from llama.cpp's for some model). The cut itself is ``plan.depth.cut_context``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specbench.base.childenv import provenance_env
from specbench.base.errors import BuildError, ConfigError, ModelError, RunError
from specbench.base.llamaopts import GPU_LAYERS, PARALLEL
from specbench.base.methods import head_archs, method_of, parts
from specbench.builder.builder import ensure_build
from specbench.builder.buildinfo import BinaryInfo, BuildInfo
from specbench.builder.buildplan import BUILD_JSON, BuildPlan, plan_build
from specbench.builder.cmake import BuildProgress, CompileError
from specbench.builder.workaround import with_workaround
from specbench.execute.server import RunningServer, post, start_server
from specbench.models.paircheck import PairCheck
from specbench.models.spec import ResolvedModel
from specbench.plan.depth import check_depths, cut_context, document_text, with_context
from specbench.plan.preflight import model_file, read_facts
from specbench.plan.serverplan import HOST
from specbench.results.folder import manifest_path
from specbench.results.manifestfile import load_manifest

if TYPE_CHECKING:
    from specbench.plan.config import Config
    from specbench.plan.invocation import Plan
    from specbench.plan.prompts import RenderedPrompt
    from specbench.plan.sections import LlamaCppConfig
    from specbench.plan.shards import Shard, Sharding

Label = str | None  # a build's label: the samples' `build` axis (None: a run's one unlabelled build)
TOKENIZER_CTX = 512  # the tokenizing server's context: it decodes nothing
_REQUEST_S = 60.0


class PlannedBuild(BuildInfo):
    """A build that does not exist yet (dry-run): binaries are where the build would put them and
    flag spellings are borrowed from a cached build of llama.cpp (the same tree when there is one)."""

    def binary(self, role: str) -> BinaryInfo:
        info = self.binaries.get(role)
        if info is None:
            raise BuildError(
                f"the cached builds have no {role} binary to learn its flags from; run `specbench build`"
            )
        return info


@dataclass
class PlannedModel:
    """A model a dry run did not fetch: where it comes from, and that it is not in the cache."""

    name: str
    source: str
    path: str  # a placeholder shown in command lines


@dataclass
class Prepared:
    """Everything decided before anything runs."""

    config: Config
    build: BuildInfo
    models: dict[str, ResolvedModel | PlannedModel]  # PlannedModel only in a dry run
    pair_checks: dict[str, PairCheck]
    prompts: list[RenderedPrompt]
    plan: Plan
    builds: dict[str | None, BuildInfo] = field(default_factory=dict)  # by label, in the config's order
    build_previews: dict[str | None, BuildPlan] = field(default_factory=dict)  # dry run: each build's plan
    sharding: Sharding | None = None  # `run --shard i/N`: the part of the plan this run measures
    roles: frozenset[str] | None = None  # ab/bisect: only these roles are measured, later rounds too


def _planned_build(preview: BuildPlan) -> BuildInfo:
    """A BuildInfo for a build that is not there: paths where it will be, flags from a cached one."""
    from specbench.base import paths

    infos = BuildInfo.load_all(paths.builds_dir())
    same_tree = [i for i in infos if i.source == str(preview.tree.path)]
    donor = next(iter(same_tree or infos), None)
    if donor is None:
        raise BuildError(
            "a dry run needs one build of llama.cpp to learn its flag spellings; run `specbench build` first"
        )
    bin_dir = preview.build_dir / "bin"
    binaries = {
        role: b.model_copy(update={"path": str(bin_dir / Path(b.path).name)})
        for role, b in donor.binaries.items()
    }
    commit = donor.commit if donor.source == str(preview.tree.path) else None
    return PlannedBuild(
        key=preview.key, source=str(preview.tree.path), commit=commit, backend=preview.backend,
        cmake_args=preview.args, bin_dir=str(bin_dir), binaries=binaries,
    )  # fmt: skip


def check_pairs(config: Config, models: dict[str, Any]) -> dict[str, PairCheck]:
    """The pre-flight pair check of every draft pair; a refused pair stops the run before it starts."""
    from specbench.models.meta import read_spec_facts
    from specbench.models.paircheck import check_pair

    checks: dict[str, PairCheck] = {}
    for name, pair in config.pairs.items():
        compared = pair.method is None or any(method_of(p).vocab_check for p in parts(pair.method))
        if pair.draft is None or not compared:
            continue  # only draft-simple compares the vocabularies (common/speculative.cpp)
        target, draft = model_file(models[pair.target]), model_file(models[pair.draft])
        if not target.is_file() or not draft.is_file():
            continue  # dry run of models not fetched yet: nothing to check
        if read_spec_facts(draft).architecture in head_archs():
            continue  # a head, not a model: plan.preflight says which method it fits
        checks[name] = check_pair(target, draft)
        if not checks[name].ok:
            raise ModelError(f"pair {name!r} ({pair.target} + {pair.draft}): {checks[name].message}")
    return checks


def _dry_models(config: Config, build: BuildInfo) -> dict[str, ResolvedModel | PlannedModel]:
    """Resolve what is already in the cache (Hub files included, found without asking the Hub);
    describe the rest without downloading or deriving."""
    from specbench.models.resolve import resolve_models

    found = resolve_models(config.models, config.base_dir, build, fetch=False)
    return {
        name: found.get(name) or PlannedModel(name, spec.describe(), f"<{name}: not cached>")
        for name, spec in config.models.items()
    }


def load_resumed(run_dir: Path, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """The config a run folder was run with, for ``--resume DIR`` without CONFIG: its manifest
    keeps the resolved config (``--set`` overrides applied), so the run continues exactly as begun."""
    import copy

    from specbench.plan.config import config_from_mapping
    from specbench.plan.configtext import apply_override

    manifest = load_manifest(run_dir)
    data = copy.deepcopy(manifest.config)
    overridden = {apply_override(data, o) for o in overrides}
    config_path = Path(manifest.config_path) if manifest.config_path else None
    base_dir = config_path.parent if config_path else run_dir
    cfg = config_from_mapping(data, base_dir, f"{manifest_path(run_dir)}: config", overridden)
    cfg.path = config_path
    return cfg


def prepare(
    config: Config,
    dry_run: bool = False,
    build_progress: Any = None,
    model_progress: Any = None,
    shard: Shard | None = None,
    roles: frozenset[str] | None = None,
) -> Prepared:
    """Build (or, dry, preview the build), resolve models, check pairs, render prompts, plan
    (``shard``: only that shard's part of the plan; ``roles``: only these roles' invocations)."""
    from specbench.models.resolve import resolve_models
    from specbench.plan.prompts import render, render_all
    from specbench.plan.sweep import make_plan

    previews = {}
    if dry_run:
        both = preview_builds(config)
        builds = _as_configured(config, {label: info for label, (_, info) in both.items()})
        previews = {label: pv for label, (pv, _) in both.items()}
        build = next(iter(builds.values()))
        models = _dry_models(config, build)
    else:
        builds = _as_configured(config, ensure_builds(config, build_progress))
        build = next(iter(builds.values()))  # the first build derives models (llama-quantize)
        models = dict(resolve_models(config.models, config.base_dir, build, progress=model_progress))
    checks = check_pairs(config, models)
    targets = {name: Path(models[name].path) for name in config.targets()}
    here = {name: path for name, path in targets.items() if path.is_file()}
    missing = sorted(targets.keys() - here.keys())  # dry run: no GGUF, no chat template or tokenizer
    chosen = config.prompt_list()  # read once (a prompts file), rendered for every target
    prompts = render_all(chosen, here) if here else []
    prompts += [render(p, name, None) for name in missing for p in chosen]
    prompts += deep_prompts(config, build, models, prompts, dry_run=dry_run or bool(missing))
    plan = make_plan(config, builds, models, prompts)
    if roles is not None:
        plan = plan.of_roles(roles)
    sharding = None
    if shard is not None:
        from specbench.plan.shards import cut

        plan, sharding = cut(plan, config, shard)
    if config.auto_repetitions:
        plan.notes.append(
            f"repetitions: auto: this is round 1 ({config.min_repetitions} repetitions); cells whose mean "
            f"t/s misses precision {config.precision:g} get one more repetition a round, up to "
            f"{config.max_repetitions}"
        )
    plan.notes += ignored_settings(config)
    plan.notes += env_notes()
    for name in missing:
        plan.notes = [n for n in plan.notes if not n.startswith(f"model {name} has no chat template")]
        plan.notes.append(f"model {name} is not cached: its prompts are shown without its chat template")
    return Prepared(config, build, models, checks, prompts, plan, builds, previews, sharding, roles)


def _as_configured(config: Config, builds: dict[str | None, BuildInfo]) -> dict[str | None, BuildInfo]:
    """``workarounds: false`` (``--no-workarounds``): builds run as built; the manifest says so."""
    if config.workarounds:
        return builds
    return {label: b.model_copy(update={"workarounds_off": True}) for label, b in builds.items()}


def env_notes() -> list[str]:
    """Variables that change llama.cpp (it reads every option from LLAMA_ARG_*) reach every binary
    started: named, since they are recorded in the manifest and make runs differ."""
    found = provenance_env()
    if not found:
        return []
    listed = ", ".join(f"{k}={v}" for k, v in found.items())
    return [f"environment: {listed} reach every llama.cpp binary (recorded in the manifest's env)"]


def ignored_settings(config: Config) -> list[str]:
    """Keys of ``repetitions: auto`` set away from their defaults while ``repetitions`` is a fixed
    count: they change nothing, and a user who set them expects they did."""
    if config.auto_repetitions:
        return []
    fields = type(config).model_fields
    changed = [k for k in ("min_repetitions", "max_repetitions") if getattr(config, k) != fields[k].default]
    precision = config.precision != fields["precision"].default
    if not changed and not precision:
        return []
    what = changed + (["precision"] if precision else [])
    why = " (precision still marks cells `imprecise` in the report)" if precision else ""
    return [
        f"{', '.join(what)} {'is' if len(what) == 1 else 'are'} for `repetitions: auto`; with repetitions "
        f"{config.repetitions} no cell is repeated to meet them{why}: --set repetitions=auto uses them"
    ]


def _named(build: LlamaCppConfig, total: int, exc: BuildError) -> BuildError:
    """The same error, saying which build of several it was (a CompileError keeps its lines)."""
    if total == 1:
        return exc
    message = f"build {build.label!r} ({build.describe().split(': ', 1)[-1]}): {exc}"
    if isinstance(exc, CompileError):
        return CompileError(message, exc.details, exc.log)
    return BuildError(message, exc.exit_code)


def _tell(progress: Callable[[BuildProgress], None] | None, label: Label, total: int) -> Any:
    """Progress of one build, its messages prefixed with the label when there are several."""
    if progress is None or total == 1:
        return progress

    def say(p: BuildProgress) -> None:
        progress(BuildProgress(p.phase, f"[{label}] {p.message}", p.done, p.total))

    return say


def ensure_builds(
    config: Config, progress: Callable[[BuildProgress], None] | None = None
) -> dict[Label, BuildInfo]:
    """Every build of the config, in its order, by label: built now or found in the cache."""
    builds = config.builds
    out: dict[Label, BuildInfo] = {}
    for build in builds:
        try:
            out[build.label] = ensure_build(
                build.backend, build.source, build.jobs, build.cmake_args,
                progress=_tell(progress, build.label, len(builds)), ref=build.ref,
            )  # fmt: skip
        except BuildError as exc:
            raise _named(build, len(builds), exc) from exc
    return out


def preview_builds(config: Config) -> dict[Label, tuple[BuildPlan, BuildInfo]]:
    """A dry run's builds: which each would be (key, commit), the cached build.json when there is one,
    else ``_planned_build`` (binaries where the build would put them)."""
    out: dict[Label, tuple[BuildPlan, BuildInfo]] = {}
    builds = config.builds
    for build in builds:
        try:
            preview = plan_build(build.backend, build.source, build.cmake_args, ref=build.ref)
        except BuildError as exc:
            raise _named(build, len(builds), exc) from exc
        info = BuildInfo.load(preview.build_dir / BUILD_JSON) if preview.cached else _planned_build(preview)
        out[build.label] = (preview, info)
    return out


class ServerTokenizer:
    """A target's tokenizer, through a running llama-server's ``/tokenize`` and ``/detokenize``."""

    def __init__(self, server: RunningServer, model: str) -> None:
        self.server, self.model = server, model

    def _ask(self, path: str, body: dict) -> dict:
        reply = post(self.server, path, body, _REQUEST_S)
        if reply.data is None:
            raise RunError(f"tokenizing with model {self.model}'s llama-server ({path}): {reply.error}")
        return reply.data

    def tokenize(self, text: str) -> list[int]:
        data = self._ask("/tokenize", {"content": text, "add_special": False, "parse_special": True})
        tokens = data.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise RunError(f"llama-server's /tokenize gave no token list for model {self.model}")
        return tokens

    def detokenize(self, tokens: list[int]) -> str:
        text = self._ask("/detokenize", {"tokens": tokens}).get("content")
        if not isinstance(text, str):
            raise RunError(f"llama-server's /detokenize gave no text for model {self.model}")
        return text


def _check_fits(prompt: RenderedPrompt, tokens: int, n_predict: int, ctx_size: int) -> None:
    """A prompt at depth that with n_predict overflows ``ctx_size`` is refused before running."""
    if ctx_size and tokens + n_predict > ctx_size:
        raise ConfigError(
            f"prompt {prompt.id} at depth {prompt.depth} is {tokens} tokens, and with n_predict {n_predict} "
            f"does not fit generation.ctx_size {ctx_size}; raise ctx_size to at least {tokens + n_predict} "
            "or lower the depth"
        )


def tokenizer_argv(build: BuildInfo, path: str) -> list[str]:
    """A llama-server that only tokenizes: small context, one slot, no warmup, on the CPU."""
    server = build.binary("server")
    argv = [*server.argv0, "-m", path, "-c", str(TOKENIZER_CTX), GPU_LAYERS.spellings[0], "0"]
    argv += [PARALLEL.spellings[0], "1", "--no-warmup", "--host", HOST, "--port", "0"]
    return with_workaround(argv, build, "server")


def deep_prompts(
    config: Config,
    build: BuildInfo,
    models: Mapping[str, object],
    prompts: list[RenderedPrompt],
    dry_run: bool = False,
) -> list[RenderedPrompt]:
    """Every prompt at every depth of ``sweep.depth`` above 0, for every target (``prompts``: the
    rendered ones, without context). A dry run tokenizes nothing: its context is a placeholder."""
    depths = sorted({d for d in config.sweep.depth if d > 0})
    if not depths:
        return []
    trained = {t: f.context_length for t, f in read_facts(config, models).items() if t in config.targets()}
    gen = config.generation
    check_depths(depths, gen.ctx_size, gen.n_predict, trained)  # before any server starts
    document, origin = document_text(config.context.file)
    if dry_run:
        return [with_context(p, d, f"[{d} tokens of {origin}]\n\n") for d in depths for p in prompts]
    out: list[RenderedPrompt] = []
    with tempfile.TemporaryDirectory(prefix="specbench-tokenize-") as tmp:
        for target in config.targets():
            path = str(model_file(models[target]))
            server = start_server(
                tokenizer_argv(build, path), Path(tmp, "out"), Path(tmp, "err"), config.timeout_s
            )
            try:
                tok = ServerTokenizer(server, target)
                ids = tok.tokenize(document)
                for p in (p for p in prompts if p.model == target):
                    for d in depths:
                        context = cut_context(document, origin, d, p.text, tok.tokenize, tok.detokenize, ids)
                        deep = with_context(p, d, context, len(tok.tokenize(context + p.text)))
                        _check_fits(deep, deep.tokens or 0, gen.n_predict, gen.ctx_size)
                        out.append(deep)
            finally:
                server.stop()
    return out

"""The plan: a config expanded into the exact, ordered list of llama.cpp invocations of a run.

Planning is pure, so ``--dry-run`` prints precisely what a run would execute. Within each
repetition a prompt's baseline runs right before the cells compared with it, then the draft models
alone they use, so thermal and frequency drift hit both sides alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from specbench.base.errors import ConfigError
from specbench.base.llamaopts import BATCH, GPU_LAYERS, PARALLEL
from specbench.builder.buildinfo import ONE_BATCH_ROLES, BinaryInfo, BuildInfo
from specbench.builder.workaround import with_workaround, workaround_argv
from specbench.plan import pairing
from specbench.plan.cells import (
    build_cells,
    build_order,
    draft_backend_sampling,
    free_args,
    group_runs,
    method_hint,
    model_path,
    option_flags,
    speculative_flags,
    with_build,
)
from specbench.plan.config import Config
from specbench.plan.depth import at_depth, draft_out_of_context
from specbench.plan.feasible import check_free_args, collapse_ignored, drop_conflicts, refuse_crashing
from specbench.plan.fit import LLAMA_BATCH, SPECIAL_TOKENS, check_fit, one_batch
from specbench.plan.invocation import Invocation, Plan
from specbench.plan.preflight import pair_methods, read_facts
from specbench.plan.prompts import RenderedPrompt
from specbench.plan.serverplan import server_plan
from specbench.results.cell import Cell, baseline_cell, baseline_of, cell_dict, group_by
from specbench.results.records import Generation

# Linux refuses a single argument over 128 KiB (MAX_ARG_STRLEN); prompts go in `-p`, so stay below.
MAX_PROMPT_BYTES = 100_000
SENTINEL_TOKENS = 64  # the speed sentinel's decode: short (its cost), long enough to time (~1 s on a CPU)
# The most invocations a plan may hold: weeks of runs on any machine, and a list built in memory.
MAX_INVOCATIONS = 200_000


def _common(binary: BinaryInfo, path: str, gen: Generation, prompt: str, ngl: int | None) -> list[str]:
    """``binary`` on the model at ``path`` with the config's generation settings."""
    argv = [*binary.argv0, "-m", path, "-p", prompt, "-n", str(gen.n_predict)]
    argv += ["--temp", f"{gen.temperature:g}", "-s", str(gen.seed)]
    if gen.top_k is not None:
        argv += ["--top-k", str(gen.top_k)]
    if gen.threads is not None:
        argv += ["-t", str(gen.threads)]
    argv += ["-c", str(gen.ctx_size), GPU_LAYERS.spellings[0], str(ngl or 0)]  # no ngl: on the CPU
    if binary.flags.no_escape:
        argv.append(binary.flags.no_escape)  # the prompt is passed verbatim (code has backslashes)
    return argv


# llama-speculative-simple logs each step at debug level: the rate over its first n_predict tokens is
# read from them (parse.span.first_tokens), since an n-gram draft can take it far past -n; the lines
# carry their time where the build prints it by default (the pin) or is asked to (2025).
STEP_LOG_LEVEL = "5"
STEP_LOG_TIME = ("--log-prefix", "--log-timestamps")


def _prompts_by_target(
    prompts: list[RenderedPrompt], targets: list[str]
) -> tuple[dict[str, list[RenderedPrompt]], dict[tuple[str, int, str], RenderedPrompt]]:
    """The prompts of each target (without context), and each at depth by (target, depth, id)."""
    by_target = {t: [p for p in prompts if p.model == t and not p.depth] for t in targets}
    deep = {(p.model, p.depth, p.id): p for p in prompts if p.model in by_target and p.depth}
    for t, ps in by_target.items():
        if not ps:
            raise ConfigError(f"no prompts were rendered for target {t!r}; render prompts for every target")
    for p in [*(p for ps in by_target.values() for p in ps), *deep.values()]:
        if len(p.text.encode()) > MAX_PROMPT_BYTES:
            at = f" with its context of {p.depth} tokens" if p.depth else ""
            what = "lower sweep.depth" if p.depth else "shorten it"
            raise ConfigError(
                f"prompt {p.id!r}{at} is {len(p.text.encode())} bytes; prompts over {MAX_PROMPT_BYTES} bytes "
                f"cannot be passed on the command line, {what}"
            )
    ids = [p.id for p in by_target[targets[0]]]
    for t in targets[1:]:
        if [p.id for p in by_target[t]] != ids:
            raise ConfigError(f"target {t!r} was given different prompts than {targets[0]!r}")
    return by_target, deep


def make_plan(
    config: Config,
    build: BuildInfo | Mapping[str | None, BuildInfo],
    models: Mapping[str, object],
    prompts: list[RenderedPrompt],
    repetitions: int | None = None,
) -> Plan:
    """Expand ``config`` into every invocation, in run order, for the binaries of its builds.

    ``build``: per build label (one serves all: an A/A run); ``models``: name -> ResolvedModel or
    path; ``repetitions``: default the config's first round. Several builds: each run of a baseline,
    cell or draft alone right after the other builds' runs of it, in ABBA order."""
    notes: list[str] = []
    builds = build if isinstance(build, Mapping) else dict.fromkeys(config.build_labels, build)
    labels = list(builds)
    completion = builds[labels[0]].binary("completion")
    targets = config.targets()
    by_target, deep = _prompts_by_target(prompts, targets)
    facts = read_facts(config, models)
    trained = {t: f.context_length for t, f in facts.items()}
    runs = pair_methods(config, facts, notes)  # refuses a method its files lack
    server = config.runner == "server"
    specs = {  # the binary that speculates, per build (each tree has its own speculative program)
        b: builds[b].binary("server") if server else builds[b].speculative(config.speculative_role)
        for b in labels
    }
    hints = {b: method_hint(config, builds[b].binaries) for b in labels}
    cells = build_cells(config, specs, notes, runs, hints)
    if not server:  # a program the build's self-test saw crash with a draft model (plan.feasible)
        for b in labels:
            refuse_crashing(builds[b], specs[b], cells, f"build {b!r}: " if len(labels) > 1 else "")
    cells = drop_conflicts(cells, specs[labels[0]], notes)  # what llama.cpp refuses (plan.feasible)
    cells = collapse_ignored(cells, facts, notes)  # and what it ignores
    counted = group_by((p for p in deep.values() if p.tokens is not None), lambda p: (p.model, p.depth))
    # by target and depth: the longest counted prompt
    longest = {k: max(p.tokens or 0 for p in ps) + SPECIAL_TOKENS for k, ps in counted.items()}
    cells, left = draft_out_of_context(cells, config.generation.n_predict, trained, longest, notes)
    left_out = [lo.model_copy(update={"cell": with_build(lo.cell, b)}) for lo in left for b in labels]
    where = f"{config.path}: " if config.path else ""
    check_fit(by_target, models, config.generation.ctx_size, where)
    reps = repetitions if repetitions is not None else config.first_repetitions
    _check_size(where, cells, len(by_target[targets[0]]), reps, len(labels))
    for t in targets:
        fallback = [p.id for p in by_target[t] if p.rendering == "fallback"]
        if fallback:
            notes.append(
                f"model {t} has no chat template: {len(fallback)} chat prompt(s) were rendered as plain "
                "'User: ... / Assistant:' text"
            )
    if not completion.flags.no_conversation and completion.name == "llama-cli":
        notes.append("llama-cli of this build has no -no-cnv; it is run with stdin closed")

    groups = group_by(cells, baseline_of)
    first = next(iter(groups.values()), None)
    sentinel = None
    if first is not None and not config.sentinel:
        notes.append(
            "speed sentinel off (sentinel: false): the machine's own speed is not re-measured during the "
            "run, so a host that slows by itself goes unseen"
        )
    elif first is not None:
        tokens = min(SENTINEL_TOKENS, config.generation.n_predict)  # never dearer than a baseline sample
        fixed = _with_generation(config, n_predict=tokens)
        alone = _Factory(fixed, completion, completion, models)
        # the first target alone, at no depth (its draft's options are no llama-completion's)
        reference = baseline_cell(with_build(first[0], labels[0])).model_copy(update={"depth": 0})
        sentinel = alone.alone("sentinel", reference, by_target[first[0].model][0], 0)
        sentinel = with_workarounds([sentinel], builds)[0]  # it runs the build's binary as samples do
    if server:
        notes += workaround_notes(builds)
        plan = server_plan(config, specs, models, targets, by_target, cells, notes, reps, deep)  # servers
        _check_free_args(config, plan.invocations, builds)
        plan.invocations = with_workarounds(plan.invocations, builds)
        on = [{"runner": "server", PARALLEL.key: n} for n in config.sweep.parallel]  # as serverplan expands
        served = [lo.model_copy(update={"cell": lo.cell.model_copy(update=u)}) for lo in left_out for u in on]
        return plan.model_copy(update={"sentinel": sentinel, "left_out": served})
    chosen = pairing.choose(config, [builds[b].backend for b in labels])
    notes += [chosen.note] if chosen.note else []
    if chosen.threads is not None:  # duet: each side on half the CPUs, with half the threads
        config = _with_generation(config, threads=chosen.threads)
    make = {b: _Factory(config, builds[b].binary("completion"), specs[b], models, deep) for b in labels}
    measured: list[Invocation] = []
    for rep in range(reps):
        order = build_order(labels, rep)
        for index in range(len(by_target[targets[0]])):
            alone_done: set[tuple] = set()
            for group in groups.values():  # each baseline right before the cells measured against it
                prompt = by_target[group[0].model][index]
                for role, c in group_runs(group, order, alone_done):
                    if role == "speculative":
                        measured.append(make[c.build].speculative(c, prompt, rep))
                    else:
                        measured.append(make[c.build].alone(role, c, prompt, rep))
    notes += workaround_notes(builds)
    _check_free_args(config, measured, builds)
    invocations = with_workarounds(_warmups(measured, config.warmup) + measured, builds)
    return Plan(runner="process", invocations=invocations, notes=notes, sentinel=sentinel,
                pairing=chosen.pairing, cpu_sets=[list(c) for c in chosen.cpu_sets],
                left_out=left_out)  # fmt: skip


def _check_size(where: str, cells: list[Cell], prompts: int, reps: int, builds: int) -> None:
    """Refuse, before it is built, a plan of more than ``MAX_INVOCATIONS`` (cells and baselines)."""
    runs = len(cells) + len(group_by(cells, baseline_of))
    if runs * prompts * reps * builds <= MAX_INVOCATIONS:
        return
    raise ConfigError(
        f"{where}the plan would run at least {runs * prompts * reps * builds:,} invocations ({len(cells)} "
        f"cells and their baselines x {prompts} prompts x {reps} repetitions"
        + (f" x {builds} builds" if builds > 1 else "")
        + f"); at most {MAX_INVOCATIONS:,}: narrow the sweep, the prompts or the repetitions"
    )


def _with_generation(config: Config, **changes: object) -> Config:
    """The config with these generation settings changed (the sentinel's tokens, a duet side's threads)."""
    return config.model_copy(update={"generation": config.generation.model_copy(update=changes)})


def _check_free_args(
    config: Config, invocations: list[Invocation], builds: Mapping[str | None, BuildInfo]
) -> None:
    """Each binary's free arguments (``args:``, a pair's, ``sweep.args``) against its probed --help."""
    kinds = group_by(invocations, lambda inv: (inv.build, inv.binary_role, tuple(free_args(config, inv))))
    for (build, role, args), same in kinds.items():  # each binary's arguments checked once
        binary = builds[build].binaries.get(role)
        if args and binary is not None:
            check_free_args(list(args), binary, "args" + (f" of {same[0].args}" if same[0].args else ""))


@dataclass
class _Factory:
    """Builds the Invocation of each role with this config's generation settings and binaries."""

    config: Config
    completion: BinaryInfo
    spec: BinaryInfo
    models: Mapping[str, object]
    deep: Mapping[tuple[str, int, str], RenderedPrompt] = field(default_factory=dict)

    def _base(self, prompt: RenderedPrompt, rep: int) -> dict:
        return {
            "prompt_id": prompt.id,
            "category": prompt.category,
            "repetition": rep,
            "prompt_text": prompt.text,
            "generation": self.config.generation,
            "timeout_s": self.config.timeout_s,
        }

    def _batch(self, binary: BinaryInfo, cell: Cell, prompt: RenderedPrompt) -> list[str]:
        """``-b`` holding the whole prompt where the speculative program needs it (``one_batch``)."""
        if self.spec.role not in ONE_BATCH_ROLES:
            return []
        spec = (self.spec.flags.options or {}).get(BATCH.key)
        text = spec.default if spec is not None else None
        default = int(text) if text is not None and text.isdigit() else LLAMA_BATCH
        size = one_batch(prompt, cell.batch_size, self.spec.name, default)
        if size is None:
            return []
        flag = (binary.flags.options or {}).get(BATCH.key)
        return [flag.flag if flag is not None and flag.flag else BATCH.spellings[0], str(size)]

    def alone(self, role: str, model: Cell, prompt: RenderedPrompt, rep: int) -> Invocation:
        """The target (``baseline``) or a draft model (``draft``) alone, with llama-completion.
        ``model``: its build, model, ngl and options (``baseline_cell`` / ``draft_alone_cell``)."""
        prompt, binary = at_depth(prompt, model.depth, self.deep), self.completion
        path = model_path(self.models, model.model)
        argv = _common(binary, path, self.config.generation, prompt.text, model.ngl)
        # no chat mode (it would wait on stdin), no echoed prompt
        argv += [f for f in (binary.flags.no_conversation, binary.flags.no_display_prompt) if f]
        argv += option_flags(binary, model, free_args(self.config, model))
        argv += self._batch(binary, model, prompt)
        return Invocation(
            role=role,
            **cell_dict(model),
            binary_role="completion",
            argv=argv,
            prompt_echoed=binary.flags.no_display_prompt is None,
            **self._base(prompt, rep),
        )

    def speculative(self, c: Cell, prompt: RenderedPrompt, rep: int) -> Invocation:
        prompt, spec = at_depth(prompt, c.depth, self.deep), self.spec
        argv = _common(spec, model_path(self.models, c.model), self.config.generation, prompt.text, c.ngl)
        if spec.role == "speculative_simple" and spec.flags.log_verbosity:
            argv += [spec.flags.log_verbosity, STEP_LOG_LEVEL]
            argv += [f for f in STEP_LOG_TIME if f in (spec.flags.known or ())]
        argv += speculative_flags(spec.flags, c, model_path(self.models, c.draft) if c.draft else None)
        argv += option_flags(spec, c, free_args(self.config, c)) + self._batch(spec, c, prompt)
        return Invocation(
            role="speculative",
            **cell_dict(c),
            binary_role=self.spec.role,
            argv=argv,
            draft_backend_sampling=draft_backend_sampling(self.spec, c),
            prompt_echoed=True,
            **self._base(prompt, rep),
        )


def _warmups(measured: list[Invocation], count: int) -> list[Invocation]:
    """``count`` copies of the first invocation of each (build, binary, model, draft) combination."""
    kinds = group_by(measured, lambda inv: (inv.build, inv.binary_role, inv.model, inv.draft))
    return [
        g[0].model_copy(update={"warmup": True, "repetition": i})
        for i in range(count)
        for g in kinds.values()
    ]


def with_workarounds(
    invocations: list[Invocation], builds: Mapping[str | None, BuildInfo]
) -> list[Invocation]:
    """``invocations`` with each build's workaround (``builder.workaround``) after the binary path."""
    out = []
    for inv in invocations:
        argv = with_workaround(list(inv.argv), builds.get(inv.build), inv.binary_role)
        out.append(inv if argv == list(inv.argv) else inv.model_copy(update={"argv": argv}))
    return out


def workaround_notes(builds: Mapping[str | None, BuildInfo]) -> list[str]:
    """One line per build that runs with a workaround (or that has one turned off)."""
    notes = []
    for label, info in builds.items():
        st = info.selftest
        if st is None or st.workaround is None:
            continue
        who = f"build {label}" if label else "this build"
        if info.workarounds_off:
            notes.append(
                f"workaround OFF for {who} (--no-workarounds): {st.workaround.reason}; expect the crash"
            )
        else:
            bench = " ".join(workaround_argv(info, "bench"))
            also = f" (llama-bench: {bench})" if bench and bench != st.workaround.flag else ""
            notes.append(
                f"workaround: {who} runs with {st.workaround.flag} on every invocation{also}: "
                f"{st.workaround.reason}; --no-workarounds runs it as built"
            )
    return notes

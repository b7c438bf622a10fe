"""The plan of the server runner: one llama-server per server setting, every request of it in a row.

A setting is what is fixed when llama-server starts (the pinned build ignores per-request
speculative fields). Per target and parallel: the baseline server, each speculative setting, the
baseline again (``results.bracket``: a change of the machine's speed shows), the drafts alone.
Requests go in batches of ``parallel`` in flight together."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import product

from specbench.base.errors import ConfigError
from specbench.base.llamaopts import GPU_LAYERS, PARALLEL
from specbench.base.methods import keeps_server_state
from specbench.builder.buildinfo import BinaryInfo
from specbench.plan.cells import (
    build_order,
    draft_backend_sampling,
    free_args,
    group_runs,
    model_path,
    option_flags,
    speculative_flags,
)
from specbench.plan.config import Config
from specbench.plan.depth import at_depth
from specbench.plan.invocation import CompletionRequest, Invocation, Plan
from specbench.plan.prompts import RenderedPrompt
from specbench.results.cell import Cell, baseline_of, cell_dict, group_by
from specbench.results.records import Generation

HOST = "127.0.0.1"
# Sample.server_ram_cache: the server's prompt cache in host RAM (``--cache-ram``, llama.cpp since
# late 2025) was turned off, or the build's llama-server has none
RAM_CACHE_OFF = "off"
RAM_CACHE_ABSENT = "absent"


def ram_cache(server: BinaryInfo) -> tuple[list[str], str]:
    """The arguments that turn off ``server``'s prompt cache in RAM, where it has one, and the record."""
    f = server.flags
    if f.cache_ram or f.known is None:  # a build probed before specbench read options: the pin's
        return [f.cache_ram or "--cache-ram", "0"], RAM_CACHE_OFF
    return [], RAM_CACHE_ABSENT


def server_argv(server: BinaryInfo, path: str, gen: Generation, ngl: int | None, parallel: int) -> list[str]:
    """A plain llama-server: ``-np`` slots of ``ctx_size`` each, no prompt cache, ``/metrics`` on."""
    f = server.flags
    ctx = gen.ctx_size * parallel
    argv = [*server.argv0, "-m", path, "-c", str(ctx), GPU_LAYERS.spellings[0], str(ngl or 0)]  # None: on CPU
    if gen.threads is not None:
        argv += ["-t", str(gen.threads)]
    argv += [f.parallel or PARALLEL.spellings[0], str(parallel), *ram_cache(server)[0]]  # unprobed: the pin's
    # /slots says whether a slot speculates (the executor asks it); 2025's llama.cpp needs --slots
    if "--slots" in (f.known or []):
        argv.append("--slots")
    # /metrics has the draft counters (verification steps, acceptance by position)
    return [*argv, "--metrics", "--host", HOST, "--port", "0"]


def order_for_server(
    config: Config,
    targets: list[str],
    by_target: Mapping[str, list[RenderedPrompt]],
    cells: list[Cell],
    make: Callable[[str, Cell, int, RenderedPrompt, int], Invocation],
    repetitions: int,
    labels: Sequence[str | None],
) -> list[list[Invocation]]:
    """The measured invocations, one list per server in (repetition, prompt) order: each baseline
    before and after the cells compared with it, then the drafts alone (at the first ``parallel``
    only: their speed is the pair's cost ratio). Several builds: each repetition is a round in which
    every build's server of a setting serves its prompts in ABBA order, minutes apart, not a sweep."""
    groups: list[list[Invocation]] = []
    rounds = [list(range(repetitions))] if len(labels) == 1 else [[r] for r in range(repetitions)]
    by_baseline = group_by(cells, baseline_of)
    for reps in rounds:
        order = build_order(labels, reps[0])
        alone_done: set[tuple] = set()
        for target, parallel in product(targets, config.sweep.parallel):
            for group in [g for g in by_baseline.values() if g[0].model == target]:
                runs = group_runs(group, order, alone_done, again=True)
                prompts = by_target[target]
                groups += [[make(role, c, parallel, p, r) for r in reps for p in prompts] for role, c in runs]
    return groups


def server_plan(
    config: Config, servers: Mapping[str | None, BinaryInfo], models: Mapping[str, object],
    targets: list[str], by_target: dict[str, list[RenderedPrompt]], cells: list[Cell], notes: list[str],
    repetitions: int, deep: Mapping[tuple[str, int, str], RenderedPrompt] | None = None,
) -> Plan:  # fmt: skip
    """One llama-server per build and setting; batches of ``parallel`` requests (see serverplan)."""
    gen = config.generation
    _refuse_shared_state(cells)

    def make(role: str, c: Cell, par: int, p: RenderedPrompt, rep: int) -> Invocation:
        """``c``: the cell (speculative) or the model alone (its build, model and ngl)."""
        server, p, spec = servers[c.build], at_depth(p, c.depth, deep or {}), role == "speculative"
        argv = server_argv(server, model_path(models, c.model), gen, c.ngl, par)
        if spec:
            argv += speculative_flags(server.flags, c, model_path(models, c.draft) if c.draft else None)
        return Invocation(
            role=role, **cell_dict(c.model_copy(update={"runner": "server", PARALLEL.key: par})),
            binary_role="server", argv=argv + option_flags(server, c, free_args(config, c)),
            request=CompletionRequest(prompt=p.text, n_predict=gen.n_predict, temperature=gen.temperature,
                                      seed=gen.seed, top_k=gen.top_k),
            prompt_echoed=False, prompt_id=p.id, category=p.category, repetition=rep, prompt_text=p.text,
            generation=gen, timeout_s=config.timeout_s, server_ram_cache=ram_cache(server)[1],
            draft_backend_sampling=draft_backend_sampling(server, c) if spec else None,
        )  # fmt: skip

    groups = order_for_server(config, targets, by_target, cells, make, repetitions, list(servers))
    batches = [g[i : i + g[0].parallel] for g in groups for i in range(0, len(g), g[0].parallel)]
    for n, batch in enumerate(batches):
        for inv in batch:
            inv.batch = n
    measured = [inv for batch in batches for inv in batch]
    if config.warmup:
        notes.append(f"server runner: {config.warmup} discarded warmup request(s) per server start")
    stateful = sorted({c.method for c in cells if keeps_server_state(c.method)})
    if stateful:
        notes.append(
            f"server runner: {', '.join(stateful)} keep(s) state between requests in llama-server: each "
            "sample gets a server of its own, warmed up with a short unrelated request that cannot prime it"
        )
    absent = sorted({str(b) for b, srv in servers.items() if ram_cache(srv)[1] == RAM_CACHE_ABSENT})
    if absent:
        whose = "this build's llama-server" if None in servers else f"llama-server of {', '.join(absent)}"
        notes.append(
            f"server runner: {whose} has no --cache-ram (no prompt cache in RAM to turn off; requests send "
            "cache_prompt: false): recorded as server_ram_cache: absent in each sample"
        )
    notes.append(
        "server runner: each baseline is measured before and after its speculative servers (A B A); "
        "a cell is judged against the nearer window"
    )
    return Plan(runner="server", invocations=measured, notes=notes, server_warmup=config.warmup)


def _refuse_shared_state(cells: list[Cell]) -> None:
    """Requests in flight together share a stateful method's pool: such cells need ``parallel: 1``."""
    shared = sorted({c.method for c in cells if c.parallel > 1 and keeps_server_state(c.method)})
    if shared:
        raise ConfigError(
            f"{', '.join(shared)} with parallel > 1 on the server runner: llama-server shares the "
            "method's n-gram state between the requests in flight, so no sample would be independent; "
            "set sweep.parallel: [1] for these methods or use runner: process"
        )

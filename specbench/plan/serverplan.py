"""The plan of the server runner: one llama-server per server setting, every request of it in a row.

A server setting is everything fixed when llama-server starts (target, ngl, slots, and for
speculative cells draft, method, draft_max, draft_min, p_min, ngld): the pinned build ignores the
per-request speculative fields, so each setting needs its own server, but one server serves every
prompt and repetition of its setting. Order: per target, ngl and parallel, the plain baseline server
first (speculative outputs are compared with its outputs), then each speculative setting, then the
baseline server again (role ``baseline-after``: the bracket of ``specbench.results.bracket``, so a
change of the machine's speed between the windows shows), then the draft models alone. Consecutive
requests of a setting are grouped in batches of ``parallel`` requests that are in flight together.
Warmups are sent by the executor, once per server start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from specbench.base.errors import ConfigError
from specbench.builder.buildinfo import BinaryInfo
from specbench.plan.cells import (
    baseline_groups,
    build_order,
    draft_alone_cells,
    draft_backend_sampling,
    free_args,
    model_path,
    option_flags,
    speculative_flags,
    with_build,
)
from specbench.plan.config import Config
from specbench.plan.depth import at_depth
from specbench.plan.invocation import Invocation, Plan
from specbench.plan.methods import keeps_server_state
from specbench.plan.prompts import RenderedPrompt
from specbench.plan.request import CompletionRequest
from specbench.results.bracket import AFTER
from specbench.results.cell import Cell, baseline_cell, cell_dict
from specbench.results.records import Generation

HOST = "127.0.0.1"


def request_for(gen: Generation, prompt: str) -> CompletionRequest:
    return CompletionRequest(
        prompt=prompt, n_predict=gen.n_predict, temperature=gen.temperature, seed=gen.seed, top_k=gen.top_k
    )


# Sample.server_ram_cache: the server's prompt cache in host RAM (``--cache-ram``, llama.cpp since
# late 2025) was turned off, or the build's llama-server has none (nothing kept there to turn off)
RAM_CACHE_OFF = "off"
RAM_CACHE_ABSENT = "absent"


def ram_cache(server: BinaryInfo) -> tuple[list[str], str]:
    """The arguments that turn off ``server``'s prompt cache in RAM, and what the sample records.

    Passed only where the build takes the option (a llama-server before ``--cache-ram`` refuses it
    and never starts); a build probed before specbench read option names at all (no ``known``
    list) gets the pinned spelling, as it always did.
    """
    f = server.flags
    if f.cache_ram:
        return [f.cache_ram, "0"], RAM_CACHE_OFF
    if f.known is None:
        return ["--cache-ram", "0"], RAM_CACHE_OFF
    return [], RAM_CACHE_ABSENT


def server_argv(server: BinaryInfo, path: str, gen: Generation, ngl: int | None, parallel: int) -> list[str]:
    """A plain llama-server: ``-np`` slots, each with the process runner's context, no prompt cache
    (``ram_cache``; requests send ``cache_prompt: false``), ``/metrics`` on.

    ``-c`` is split between the slots (the KV cache is not unified by default), so each slot gets
    ``ctx_size``. ``--port 0`` lets the system pick a free port (the server prints it).
    """
    f = server.flags
    ctx = gen.ctx_size * parallel
    argv = [*server.argv0, "-m", path, "-c", str(ctx), "-ngl", str(ngl or 0)]  # no ngl: on the CPU
    if gen.threads is not None:
        argv += ["-t", str(gen.threads)]
    # Builds probed before specbench knew -np record no spelling: the pinned one's, then.
    argv += [f.parallel or "-np", str(parallel), *ram_cache(server)[0]]
    # /slots says whether a slot speculates (the executor asks it); llama.cpp of 2025 serves it
    # only with --slots, the pin by default: passed wherever the build takes it
    if "--slots" in (f.known or []):
        argv.append("--slots")
    # --metrics: /metrics has the draft counters (verification steps, acceptance by position)
    return [*argv, "--metrics", "--host", HOST, "--port", "0"]


def order_for_server(
    config: Config,
    targets: list[str],
    by_target: Mapping[str, list[RenderedPrompt]],
    cells: list,
    baseline: Callable[[Cell, int, RenderedPrompt, int], object],
    speculative: Callable[[Cell, int, RenderedPrompt, int], object],
    draft_alone: Callable[[Cell, int, RenderedPrompt, int], object],
    repetitions: int,
    labels: Sequence[str | None] = (None,),
    baseline_after: Callable[[Cell, int, RenderedPrompt, int], object] | None = None,
) -> list[list]:
    """The measured invocations grouped by server setting, baselines before what compares with them
    (and, with ``baseline_after``, again after it).

    Returns one list per server, each in (repetition, prompt) order. The draft models run alone
    only at the sweep's first ``parallel`` value: their speed is the cost ratio, a property of the pair.
    Several builds (``labels``): every repetition is a round of its own, in which each setting's
    server of every build serves that repetition's prompts, the builds one after the other in ABBA
    order; so each build's requests of a setting come minutes, not a whole sweep, after the others'.
    """
    groups: list[list] = []
    rounds = [list(range(repetitions))] if len(labels) == 1 else [[r] for r in range(repetitions)]
    by_baseline = baseline_groups(cells)
    for reps in rounds:
        order = build_order(labels, reps[0])
        alone_done: set[tuple] = set()
        for target in targets:
            prompts = by_target[target]
            for parallel in config.sweep.parallel:
                for group in [g for g in by_baseline.values() if g[0].model == target]:
                    for b in order:
                        base = with_build(group[0], b)
                        groups.append([baseline(base, parallel, p, r) for r in reps for p in prompts])
                    for c in group:
                        for b in order:
                            cell = with_build(c, b)
                            groups.append([speculative(cell, parallel, p, r) for r in reps for p in prompts])
                    if baseline_after is not None:
                        for b in order:
                            base = with_build(group[0], b)
                            groups.append(
                                [baseline_after(base, parallel, p, r) for r in reps for p in prompts]
                            )
                    for draft in draft_alone_cells(group, alone_done, order):
                        groups.append([draft_alone(draft, parallel, p, r) for r in reps for p in prompts])
    return groups


def server_plan(
    config: Config, servers: Mapping[str | None, BinaryInfo], models: Mapping[str, object],
    targets: list[str], by_target: dict[str, list[RenderedPrompt]], cells: list[Cell], notes: list[str],
    repetitions: int, deep: Mapping[tuple[str, int, str], RenderedPrompt] | None = None,
) -> Plan:  # fmt: skip
    """One llama-server per build and setting; batches of ``parallel`` requests (see serverplan)."""
    gen = config.generation
    _refuse_shared_state(cells)

    def make(
        role: str, c: Cell, par: int, p: RenderedPrompt, rep: int, argv: list[str] | None = None
    ) -> Invocation:
        """``c``: the cell (speculative) or the model alone (its build, model and ngl)."""
        p = at_depth(p, c.depth, deep or {})
        if argv is None:
            argv = server_argv(servers[c.build], model_path(models, c.model), gen, c.ngl, par)
            argv += option_flags(servers[c.build], c, free_args(config, c))
        return Invocation(
            role=role, **cell_dict(c.model_copy(update={"runner": "server", "parallel": par})),
            binary_role="server", argv=argv, prompt_echoed=False, request=request_for(gen, p.text),
            prompt_id=p.id, category=p.category, repetition=rep, prompt_text=p.text, generation=gen,
            timeout_s=config.timeout_s, server_ram_cache=ram_cache(servers[c.build])[1],
        )  # fmt: skip

    def speculative(c: Cell, parallel: int, p: RenderedPrompt, rep: int) -> Invocation:
        server = servers[c.build]
        base = server_argv(server, model_path(models, c.model), gen, c.ngl, parallel)
        draft = model_path(models, c.draft) if c.draft else None
        flags = speculative_flags(server.flags, c, draft) + option_flags(server, c, free_args(config, c))
        inv = make("speculative", c, parallel, p, rep, argv=base + flags)
        return inv.model_copy(update={"draft_backend_sampling": draft_backend_sampling(server, c)})

    def alone(model: Cell) -> Cell:
        return baseline_cell(model)

    groups = order_for_server(
        config, targets, by_target, cells,
        baseline=lambda c, par, p, rep: make("baseline", alone(c), par, p, rep),
        speculative=speculative,
        draft_alone=lambda d, par, p, rep: make("draft", d, par, p, rep),
        repetitions=repetitions, labels=list(servers),
        baseline_after=lambda c, par, p, rep: make(AFTER, alone(c), par, p, rep),
    )  # fmt: skip
    measured: list[Invocation] = []
    batch = 0
    for group in groups:
        for start in range(0, len(group), group[0].parallel):
            for inv in group[start : start + group[0].parallel]:
                inv.batch = batch
                measured.append(inv)
            batch += 1
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
        whose = (
            "this build's llama-server has"
            if list(servers) == [None]
            else f"llama-server of {', '.join(absent)} has"
        )
        notes.append(
            f"server runner: {whose} no --cache-ram (no prompt cache in RAM to turn off; requests send "
            "cache_prompt: false): recorded as server_ram_cache: absent in each sample"
        )
    notes.append(
        "server runner: each baseline is measured before and after its speculative servers (A B A); "
        "a cell is judged against the nearer window"
    )
    return Plan(runner="server", invocations=measured, notes=notes, server_warmup=config.warmup)


def _refuse_shared_state(cells: list[Cell]) -> None:
    """Requests in flight together share a stateful method's pool (``keeps_server_state``): each
    sample would be drafted from the others' answers. Such cells need ``parallel: 1``."""
    shared = sorted({c.method for c in cells if c.parallel > 1 and keeps_server_state(c.method)})
    if shared:
        raise ConfigError(
            f"{', '.join(shared)} with parallel > 1 on the server runner: llama-server shares the "
            "method's n-gram state between the requests in flight, so no sample would be independent; "
            "set sweep.parallel: [1] for these methods or use runner: process"
        )

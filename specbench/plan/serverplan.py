"""The plan of the server runner: one llama-server per server setting, every request of it in a row.

A server setting is everything fixed when llama-server starts (target, ngl, slots, and for
speculative cells draft, method, draft_max, draft_min, p_min, ngld): the pinned build ignores the
per-request speculative fields, so each setting needs its own server, but one server serves every
prompt and repetition of its setting. Order: per target, ngl and parallel, the plain baseline server
first (speculative outputs are compared with its outputs), then each speculative setting, then the
draft models alone. Consecutive requests of a setting are grouped in batches of ``parallel``
requests that are in flight together. Warmups are sent by the executor, once per server start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from specbench.build.buildinfo import BinaryInfo
from specbench.plan.cells import Cell, fmt_num, model_path
from specbench.plan.config import DRAFT_METHOD, Config
from specbench.plan.invocation import Invocation, Plan
from specbench.plan.prompts import RenderedPrompt
from specbench.plan.request import CompletionRequest
from specbench.results.records import Generation

HOST = "127.0.0.1"


def request_for(gen: Generation, prompt: str) -> CompletionRequest:
    return CompletionRequest(
        prompt=prompt, n_predict=gen.n_predict, temperature=gen.temperature, seed=gen.seed, top_k=gen.top_k
    )


def server_argv(server: BinaryInfo, path: str, gen: Generation, ngl: int, parallel: int) -> list[str]:
    """A plain llama-server: ``-np`` slots, each with the process runner's context, no prompt cache.

    ``-c`` is split between the slots (the KV cache is not unified by default), so each slot gets
    ``ctx_size``. ``--port 0`` lets the system pick a free port (the server prints it).
    """
    f = server.flags
    ctx = gen.ctx_size * parallel
    argv = [server.path, "-m", path, "-c", str(ctx), "-ngl", str(ngl)]
    if gen.threads is not None:
        argv += ["-t", str(gen.threads)]
    # Builds probed before specbench knew these options record no spelling: the pinned one's, then.
    argv += [f.parallel or "-np", str(parallel), f.cache_ram or "--cache-ram", "0"]
    return [*argv, "--host", HOST, "--port", "0"]


def speculative_server_argv(
    server: BinaryInfo, base: list[str], method: str, draft_path: str | None, ngld: int | None,
    draft_max: int | None, draft_min: int | None, p_min: float | None,
    ngram_size_n: int | None = None, ngram_size_m: int | None = None,
) -> list[str]:  # fmt: skip
    """The plain server's command plus the speculative options, spelled as this build's server takes them."""
    f = server.flags
    argv = list(base)
    if method == DRAFT_METHOD:
        argv += [f.model_draft or "-md", str(draft_path)]
        if ngld is not None and f.ngld:
            argv += [f.ngld, str(ngld)]
        if draft_max is not None and f.draft_max:
            argv += [f.draft_max, str(draft_max)]
        if draft_min is not None and f.draft_min:
            argv += [f.draft_min, str(draft_min)]
        if p_min is not None and f.p_min:
            argv += [f.p_min, fmt_num(p_min)]
        if f.spec_type and "draft-simple" in f.spec_types:
            argv += [f.spec_type, "draft-simple"]  # -md alone does not speculate in the pinned build
    else:
        argv += [f.spec_type or "--spec-type", method]
        sizes = (f.ngram_sizes or {}).get(method)
        if ngram_size_n is not None and sizes is not None and sizes.n:
            argv += [sizes.n, str(ngram_size_n)]
        if ngram_size_m is not None and sizes is not None and sizes.m:
            argv += [sizes.m, str(ngram_size_m)]
    return argv


def order_for_server(
    config: Config,
    targets: list[str],
    by_target: Mapping[str, list[RenderedPrompt]],
    cells: list,
    baseline: Callable[[str, int, int, RenderedPrompt, int], object],
    speculative: Callable[[object, int, RenderedPrompt, int], object],
    draft_alone: Callable[[str, int, int, RenderedPrompt, int], object],
    repetitions: int,
) -> list[list]:
    """The measured invocations grouped by server setting, baselines before what compares with them.

    Returns one list per server, each in (repetition, prompt) order. The draft models run alone
    only at the sweep's first ``parallel`` value: their speed is the cost ratio, a property of the pair.
    """
    groups: list[list] = []
    alone_done: set[tuple[str, int]] = set()
    reps = range(repetitions)
    for target in targets:
        prompts = by_target[target]
        for parallel in config.sweep.parallel:
            for ngl in config.sweep.ngl:
                group = [c for c in cells if c.target == target and c.ngl == ngl]
                if not group:
                    continue
                groups.append([baseline(target, ngl, parallel, p, r) for r in reps for p in prompts])
                for c in group:
                    groups.append([speculative(c, parallel, p, r) for r in reps for p in prompts])
                for c in group:
                    layers = c.ngld if c.ngld is not None else 0
                    if c.draft is not None and (c.draft, layers) not in alone_done:
                        alone_done.add((c.draft, layers))
                        groups.append(
                            [draft_alone(c.draft, layers, parallel, p, r) for r in reps for p in prompts]
                        )
    return groups


def server_plan(
    config: Config, server: BinaryInfo, models: Mapping[str, object], targets: list[str],
    by_target: dict[str, list[RenderedPrompt]], cells: list[Cell], notes: list[str], repetitions: int,
) -> Plan:  # fmt: skip
    """One llama-server per setting; batches of ``parallel`` requests (see serverplan)."""
    gen = config.generation

    def make(role: str, model: str, ngl: int, par: int, p: RenderedPrompt, rep: int, **extra) -> Invocation:
        argv = extra.pop("argv", None) or server_argv(server, model_path(models, model), gen, ngl, par)
        return Invocation(
            role=role, model=model, ngl=ngl, binary_role="server", argv=argv, prompt_echoed=False,
            request=request_for(gen, p.text), runner="server", parallel=par, prompt_id=p.id,
            category=p.category, repetition=rep, prompt_text=p.text, generation=gen,
            timeout_s=config.timeout_s, **extra,
        )  # fmt: skip

    def speculative(c: Cell, parallel: int, p: RenderedPrompt, rep: int) -> Invocation:
        base = server_argv(server, model_path(models, c.target), gen, c.ngl, parallel)
        draft = model_path(models, c.draft) if c.draft else None
        argv = speculative_server_argv(
            server, base, c.method, draft, c.ngld, c.draft_max, c.draft_min, c.p_min,
            c.ngram_size_n, c.ngram_size_m,
        )  # fmt: skip
        return make(
            "speculative", c.target, c.ngl, parallel, p, rep, argv=argv, pair=c.pair, draft=c.draft,
            method=c.method, draft_max=c.draft_max, draft_min=c.draft_min, p_min=c.p_min, ngld=c.ngld,
            ngram_size_n=c.ngram_size_n, ngram_size_m=c.ngram_size_m,
        )  # fmt: skip

    groups = order_for_server(
        config, targets, by_target, cells,
        baseline=lambda t, ngl, par, p, rep: make("baseline", t, ngl, par, p, rep),
        speculative=speculative,
        draft_alone=lambda d, ngld, par, p, rep: make("draft", d, ngld, par, p, rep),
        repetitions=repetitions,
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
    return Plan(invocations=measured, notes=notes, server_warmup=config.warmup)

"""The command lines tune hands the user: llama-speculative-simple's and llama-server's."""

from __future__ import annotations

import shlex

from specbench.execute import preparation
from specbench.plan.cells import free_args, option_axes, option_flags, speculative_flags
from specbench.plan.config import Config
from specbench.results.cell import Cell
from specbench.tune.candidates import Setting
from specbench.tune.setup import tuned_draft


def with_placeholder(argv: list[str], prompt: str) -> str:
    return shlex.join(["PROMPT" if a == prompt else a for a in argv]).replace("PROMPT", '"$PROMPT"')


def server_command(prepared: preparation.Prepared, base: Config, s: Setting, pair: str) -> str:
    """llama-server with the same models, settings and llama.cpp options (spelled as its --help does)."""
    target, draft = base.pairs[pair].target, tuned_draft(base, pair)
    server = prepared.build.binaries.get("server")
    spec = prepared.build.speculative(base.speculative_role)
    f = server.flags if server is not None and server.flags.draft_max else spec.flags
    gen = base.generation
    argv = [*(server.argv0 if server else ["llama-server"]), "-m", str(prepared.models[target].path),
            "-c", str(gen.ctx_size), "-ngl", str(s.ngl)]  # fmt: skip
    if gen.threads is not None:
        argv += ["-t", str(gen.threads)]
    cell = Cell(model=target, draft=draft, method=s.method, draft_max=s.draft_max, draft_min=s.draft_min,
                p_min=s.p_min, ngl=s.ngl, ngld=s.ngld, **option_axes(base, pair, [])[0])  # fmt: skip
    argv += speculative_flags(f, cell, str(prepared.models[draft].path))
    if server is not None:
        argv += option_flags(server, cell, free_args(base, cell))
    return shlex.join(argv)

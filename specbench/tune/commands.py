"""The command lines tune hands the user: llama-speculative-simple's and llama-server's."""

from __future__ import annotations

import shlex

from specbench.execute import benchmark
from specbench.plan.cells import speculative_flags
from specbench.plan.config import Config
from specbench.results.cell import Cell
from specbench.tune.candidates import Setting


def with_placeholder(argv: list[str], prompt: str) -> str:
    return shlex.join(["PROMPT" if a == prompt else a for a in argv]).replace("PROMPT", '"$PROMPT"')


def server_command(prepared: benchmark.Prepared, base: Config, s: Setting, target: str, draft: str) -> str:
    """llama-server with the same models and settings (its flag spellings come from its --help)."""
    server = prepared.build.binaries.get("server")
    spec = prepared.build.binary(base.speculative_role)
    f = server.flags if server is not None and server.flags.draft_max else spec.flags
    gen = base.generation
    argv = [server.path if server else "llama-server", "-m", str(prepared.models[target].path),
            "-c", str(gen.ctx_size), "-ngl", str(s.ngl)]  # fmt: skip
    if gen.threads is not None:
        argv += ["-t", str(gen.threads)]
    cell = Cell(model=target, draft=draft, method=s.method, draft_max=s.draft_max, draft_min=s.draft_min,
                p_min=s.p_min, ngl=s.ngl, ngld=s.ngld)  # fmt: skip
    return shlex.join(argv + speculative_flags(f, cell, str(prepared.models[draft].path)))

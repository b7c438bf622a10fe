"""The command lines ``specbench tune`` hands the user for its best setting: llama-speculative-simple's
(the command a round of the process runner ran, whichever runner measured) and llama-server's."""

from __future__ import annotations

import shlex
from dataclasses import asdict

from specbench.builder.workaround import with_workaround
from specbench.execute import preparation
from specbench.plan.cells import free_args, option_axes, option_flags, speculative_flags
from specbench.plan.config import Config
from specbench.results.cell import Cell
from specbench.tune.candidates import Setting
from specbench.tune.rounds import invocations, round_config
from specbench.tune.setup import tuned_draft


def speculative_command(prepared: preparation.Prepared, base: Config, s: Setting) -> str:
    """llama-speculative-simple as a round of the process runner runs setting ``s``, the prompt
    left to ``$PROMPT``."""
    cfg = round_config(base, [s], 1, 0).model_copy(update={"runner": "process"})
    plan = invocations(cfg, prepared, [s])
    spec = next(i for i in plan.invocations if i.role == "speculative")
    return with_placeholder(spec.argv, spec.prompt_text)


def with_placeholder(argv: list[str], prompt: str) -> str:
    """``argv`` for a shell, the prompt replaced by ``"$PROMPT"``."""
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
    cell = Cell(model=target, draft=draft, **asdict(s), **option_axes(base, pair, [])[0])
    argv += speculative_flags(f, cell, str(prepared.models[draft].path))
    if server is not None:
        argv += option_flags(server, cell, free_args(base, cell))
        # the build's self-test workaround (--no-repack where the AMX repack crashed), as every run
        # of this build gets it: a printed command without it crashes where the user pastes it
        argv = with_workaround(argv, prepared.build, "server")
    return shlex.join(argv)

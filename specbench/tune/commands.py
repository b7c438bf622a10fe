"""The command lines tune hands the user: llama-speculative-simple's and llama-server's."""

from __future__ import annotations

import shlex

from specbench.execute import benchmark
from specbench.plan.config import Config
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
            f.model_draft or "-md", str(prepared.models[draft].path), "-c", str(gen.ctx_size),
            "-ngl", str(s.ngl), f.ngld or "-ngld", str(s.ngld),
            f.draft_max or "--draft-max", str(s.draft_max)]  # fmt: skip
    if f.draft_min:
        argv += [f.draft_min, str(s.draft_min)]
    if f.p_min:
        argv += [f.p_min, f"{s.p_min:g}"]
    if gen.threads is not None:
        argv += ["-t", str(gen.threads)]
    if f.spec_type and "draft-simple" in f.spec_types:
        argv += [f.spec_type, "draft-simple"]
    return shlex.join(argv)

"""The prompts at depth: each target's prompts with a context of exactly D tokens in front.

The tokens are counted by the target's own tokenizer as llama.cpp runs it, through a llama-server of
the build started once per target and asked ``/tokenize`` and ``/detokenize``: the builds have no
``llama-tokenize``, and a Python tokenizer would drift from llama.cpp's for some model. The cut
itself is ``plan.depth.cut_context``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from specbench.base.errors import ConfigError, RunError
from specbench.base.llamaopts import GPU_LAYERS, PARALLEL
from specbench.builder.buildinfo import BuildInfo
from specbench.builder.workaround import with_workaround
from specbench.execute.server import RunningServer, post, start_server
from specbench.plan.config import Config
from specbench.plan.depth import check_depths, cut_context, document_text, with_context
from specbench.plan.preflight import read_facts
from specbench.plan.prompts import RenderedPrompt
from specbench.plan.serverplan import HOST

TOKENIZER_CTX = 512  # the tokenizing server's context: it decodes nothing
_REQUEST_S = 60.0


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
            path = str(getattr(models[target], "path", models[target]))
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

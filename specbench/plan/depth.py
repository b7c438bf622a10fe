"""Speculation at depth: the context of exactly D tokens a sample generates after (``sweep.depth``).

The first D tokens (the target's tokenizer) of ``context.file`` or the shipped document go in front
of the prompt, for baseline and speculative side alike. The cut is checked on the joined text, since
tokens merge across the join; a depth no context can hold is refused before anything runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path

from specbench.base.errors import ConfigError
from specbench.base.methods import method_of, parts
from specbench.plan.prompts import RenderedPrompt
from specbench.results.cell import Cell, LeftOut

DEFAULT_DOCUMENT = "us-constitution.txt"
# between the context and the prompt, the first that gives an exact count (the last ends in no
# space, for a prompt that starts with one: whitespace merges across the join)
SEPARATORS = ("\n\n", "\n", " ", "", "\n\n---")
_ATTEMPTS = 8

Tokenize = Callable[[str], list[int]]  # text -> token ids, no BOS/EOS added
Detokenize = Callable[[list[int]], str]


def document_text(path: Path | None) -> tuple[str, str]:
    """(the document's text, its name for messages): ``context.file`` or the shipped default."""
    if path is None:
        text = resources.files("specbench.plan").joinpath("contexts", DEFAULT_DOCUMENT).read_text("utf-8")
        return text, f"the shipped context ({DEFAULT_DOCUMENT})"
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"context.file {path}: not UTF-8 text ({exc.reason}); give a text file") from exc
    except OSError as exc:
        raise ConfigError(f"context.file {path}: cannot read it ({exc.strerror or exc})") from exc
    if not text.strip():
        raise ConfigError(f"context.file {path}: the file is empty; give a document to fill the context with")
    return text, f"context.file {path}"


def check_depths(depths: list[int], ctx_size: int, n_predict: int, trained: Mapping[str, int | None]) -> None:
    """Refuse a depth (plus n_predict) at or over ``ctx_size`` or a target's trained context."""
    deepest = max(depths)
    if deepest == 0:
        return
    if ctx_size and deepest + n_predict >= ctx_size:
        raise ConfigError(
            f"sweep.depth {deepest} does not fit generation.ctx_size {ctx_size} with n_predict {n_predict} "
            f"and the prompt; raise ctx_size (to at least {deepest + n_predict + 512}) or lower the depth"
        )
    for name, limit in trained.items():
        if limit and deepest + n_predict >= limit:
            raise ConfigError(
                f"sweep.depth {deepest} is beyond model {name}'s context ({limit} tokens, its GGUF "
                f"context_length) with n_predict {n_predict}; lower the depth below {limit - n_predict}"
            )


def draft_context(c: Cell, trained: Mapping[str, int | None]) -> tuple[int, str, str] | None:
    """The context the cell's draft model decodes in, what sets it and the cure when it is too small:
    ``ctx_size_draft`` where set, else the draft's trained context (past it its positions are
    untrained). None: no draft model of its own (n-gram, MTP, a head) or nothing known."""
    own = any(method_of(p).draft_model and not method_of(p).draft_arch for p in parts(c.method))
    if c.draft is None or not own:
        return None
    if c.ctx_size_draft:
        return c.ctx_size_draft, f"ctx_size_draft {c.ctx_size_draft}", "raise ctx_size_draft"
    limit = trained.get(c.draft)
    if not limit:
        return None
    what = f"draft {c.draft}'s context ({limit} tokens, its GGUF context_length)"
    return limit, what, "use a draft trained on a longer context, or lower the depth"


def draft_out_of_context(
    cells: list[Cell], n_predict: int, trained: Mapping[str, int | None],
    prompt_tokens: Mapping[tuple[str, int], int], notes: list[str],
) -> tuple[list[Cell], list[LeftOut]]:  # fmt: skip
    """The cells whose draft context holds their depth, prompt and n_predict, and each other one
    left out and named (a note and a ``LeftOut``): a draft whose context fills up stops drafting, so
    its figure would not be the setting's. ``prompt_tokens``: the longest counted, by target and depth."""
    kept, left = [], []
    for c in cells:
        context = draft_context(c, trained)
        need = prompt_tokens.get((c.model, c.depth), c.depth) + n_predict
        if context is None or need < context[0]:
            kept.append(c)
            continue
        limit, what, cure = context
        reason = (
            f"draft out of context: {c.pair} {c.method} at depth {c.depth} is not run: {what} cannot hold "
            f"the depth, the prompt and n_predict {n_predict} ({need} tokens); {cure}"
        )
        notes.append(reason)
        left.append(LeftOut(cell=c, reason=reason))
    return kept, left


def cut_context(
    document: str, origin: str, depth: int, prompt: str, tokenize: Tokenize, detokenize: Detokenize,
    ids: list[int] | None = None,
) -> str:  # fmt: skip
    """The context of exactly ``depth`` tokens before ``prompt``: the document's first tokens and a
    break (``ids``: the document tokenized). ConfigError when the document is too short (never
    repeated: that would flatter speculation) or no cut is exact."""
    if depth == 0:
        return ""
    ids = tokenize(document) if ids is None else ids
    if len(ids) < depth:
        raise ConfigError(
            f"{origin} has {len(ids)} tokens, too few for sweep.depth {depth}; give context.file a "
            "longer document (it is never repeated: repeated text would flatter speculation)"
        )
    own = len(tokenize(prompt))

    def reached(k: int, sep: str) -> int:
        return len(tokenize(detokenize(ids[:k]) + sep + prompt)) - own

    for sep in SEPARATORS:
        k, tried = depth, set()
        for _ in range(_ATTEMPTS):  # Newton-like: the count moves about one token per token kept
            tried.add(k)
            got = reached(k, sep)
            if got == depth:
                return detokenize(ids[:k]) + sep
            k = max(0, min(len(ids), k + depth - got))
            if k in tried:
                break
        for near in range(max(0, k - 3), min(len(ids), k + 3) + 1):  # where a merge skips a count
            if near not in tried and reached(near, sep) == depth:
                return detokenize(ids[:near]) + sep
    raise ConfigError(
        f"cannot cut {origin} to exactly {depth} tokens before prompt {prompt[:30]!r} (its tokens merge "
        "across every cut); try another depth or context.file"
    )


def at_depth(
    prompt: RenderedPrompt, depth: int, deep: Mapping[tuple[str, int, str], RenderedPrompt]
) -> RenderedPrompt:
    """The prompt a cell at ``depth`` is given (``deep``: by target, depth and prompt id)."""
    if depth == 0:
        return prompt
    found = deep.get((prompt.model, depth, prompt.id))
    if found is None:
        raise ConfigError(
            f"no context of depth {depth} was prepared for target {prompt.model!r} (prompt {prompt.id}); "
            "plan with the prompts `specbench.execute.preparation.deep_prompts` makes"
        )
    return found


def with_context(
    prompt: RenderedPrompt, depth: int, context: str, tokens: int | None = None
) -> RenderedPrompt:
    """``prompt`` at ``depth``: the context in front of its text (``tokens``: the joined count)."""
    return prompt.model_copy(update={"text": context + prompt.text, "depth": depth, "tokens": tokens})

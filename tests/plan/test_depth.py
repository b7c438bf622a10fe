"""Speculation at depth in the plan: the context of exactly D tokens (cut with a stand-in
tokenizer whose tokens merge across the join, as BPE's do), the refusals before running, and the
depth axis reaching every invocation, the same context on both sides of a pair."""

from __future__ import annotations

import re

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.depth import check_depths, cut_context, document_text, draft_out_of_context, with_context
from specbench.plan.sweep import make_plan
from specbench.results.cell import Cell, baseline_of
from tests.helpers.sweeps import MODELS, make_config, rendered

# GPT-2's pre-tokenizer, letters and digits aside: a word with its leading space, whitespace before
# a word but its last space: "\n\n" and " Hello" joined are "\n", "\n", " Hello" (a merge at the join).
_TOKEN = re.compile(r" ?[^\s]+|\s+(?!\S)|\s+")


class WordTokenizer:
    """Tokens are words and whitespace runs; ids index a vocabulary grown as it goes."""

    def __init__(self) -> None:
        self.vocab: list[str] = []

    def tokenize(self, text: str) -> list[int]:
        out = []
        for piece in _TOKEN.findall(text):
            if piece not in self.vocab:
                self.vocab.append(piece)
            out.append(self.vocab.index(piece))
        return out

    def detokenize(self, ids: list[int]) -> str:
        return "".join(self.vocab[i] for i in ids)


DOC = " ".join(f"word{i % 97}" + ("\n\n" if i % 50 == 49 else "") for i in range(3000))


@pytest.mark.parametrize("prompt", ["Write a poem.", " leading space", "\n\nnewlines first", "x"])
@pytest.mark.parametrize("depth", [1, 2, 7, 256, 1000])
def test_the_context_is_exactly_depth_tokens_of_the_joined_text(prompt, depth):
    tok = WordTokenizer()
    context = cut_context(DOC, "doc", depth, prompt, tok.tokenize, tok.detokenize)
    assert len(tok.tokenize(context + prompt)) - len(tok.tokenize(prompt)) == depth
    assert DOC.startswith(context.removesuffix("---").rstrip())  # the document's beginning, never repeated


def test_depth_0_is_the_prompt_alone_and_a_short_document_is_refused_in_one_line():
    tok = WordTokenizer()
    assert cut_context(DOC, "doc", 0, "p", tok.tokenize, tok.detokenize) == ""
    with pytest.raises(ConfigError, match=r"^doc has \d+ tokens, too few for sweep.depth 7000; ") as exc:
        cut_context(DOC, "doc", 7000, "p", tok.tokenize, tok.detokenize)
    assert "\n" not in str(exc.value)


def test_the_shipped_document_is_long_prose():
    text, origin = document_text(None)
    assert "We the People" in text and len(text) > 30_000
    assert "us-constitution.txt" in origin


def test_a_depth_beyond_the_context_is_refused_before_running():
    check_depths([0, 1024], 2048, 64, {"t": 8192})  # fits
    with pytest.raises(ConfigError, match=r"sweep.depth 4096 does not fit generation.ctx_size 2048"):
        check_depths([0, 4096], 2048, 64, {"t": 8192})
    with pytest.raises(ConfigError, match=r"beyond model t's context \(8192 tokens, its GGUF context_len"):
        check_depths([8192], 0, 64, {"t": 8192})
    check_depths([8192], 0, 64, {"t": None})  # unknown: llama.cpp's own check at run time


def test_a_context_file_is_validated_like_every_config_path(tmp_path):
    with pytest.raises(ConfigError, match=r"^test.yaml: context.file: .*missing.txt does not exist"):
        make_config(tmp_path, context={"file": "missing.txt"})
    (tmp_path / "folder").mkdir()
    with pytest.raises(ConfigError, match=r"context.file: .*folder is a folder, not a text file"):
        make_config(tmp_path, context={"file": "folder"})
    with pytest.raises(ConfigError, match=r"context.file .*bytes; a file or folder name is at most 255"):
        make_config(tmp_path, context={"file": "x" * 300})
    with pytest.raises(ConfigError, match=r"sweep.depth\[0\]"):
        make_config(tmp_path, sweep={"depth": [-1]})
    (tmp_path / "doc.txt").write_text("some text", encoding="utf-8")
    assert make_config(tmp_path, context={"file": "doc.txt"}).context.file == tmp_path / "doc.txt"


def _deep(config, depths):
    """The rendered prompts, and each at every depth with a context that names its depth."""
    base = rendered(config)
    return base + [with_context(p, d, f"<ctx {d}>\n\n") for d in depths for p in base]


def test_depth_is_an_axis_and_both_sides_of_a_pair_get_the_same_context(tmp_path, llama_build):
    config = make_config(tmp_path, sweep={"method": ["draft"], "draft_max": [4], "depth": [0, 256]})
    plan = make_plan(config, llama_build, MODELS, _deep(config, [256]))
    spec = [i for i in plan.measured if i.role == "speculative"]
    assert sorted({i.depth for i in spec}) == [0, 256]
    by_key = {(baseline_of(i), i.prompt_id, i.repetition): i for i in plan.measured if i.role == "baseline"}
    assert len(by_key) == len([i for i in plan.measured if i.role == "baseline"])
    for inv in spec + [i for i in plan.measured if i.role == "draft"]:
        base = by_key[(baseline_of(inv), inv.prompt_id, inv.repetition)] if inv.role != "draft" else None
        assert inv.prompt_text.startswith(f"<ctx {inv.depth}>") == (inv.depth > 0)
        if base is not None:
            assert base.depth == inv.depth and base.prompt_text == inv.prompt_text
            assert inv.prompt_text in inv.argv and base.prompt_text in base.argv
    assert plan.sentinel is not None and plan.sentinel.depth == 0  # the fixed reference: no context


def test_the_server_plan_sends_the_context_too(tmp_path, llama_build):
    sweep = {"method": ["draft"], "draft_max": [4], "depth": [0, 64]}
    config = make_config(tmp_path, runner="server", sweep=sweep)
    plan = make_plan(config, llama_build, MODELS, _deep(config, [64]))
    for inv in plan.measured:
        assert inv.request is not None
        assert inv.request.prompt.startswith("<ctx 64>") == (inv.depth == 64)


def test_a_cell_at_a_depth_without_its_context_is_refused(tmp_path, llama_build):
    config = make_config(tmp_path, sweep={"method": ["draft"], "draft_max": [4], "depth": [0, 256]})
    with pytest.raises(ConfigError, match="no context of depth 256 was prepared"):
        make_plan(config, llama_build, MODELS, rendered(config))


def test_a_draft_whose_context_cannot_hold_the_depth_is_named_and_not_run():
    cells = [
        Cell(pair="p", model="t", draft="d", method="draft", depth=d, ctx_size_draft=c)
        for d, c in ((0, 300), (256, 300), (256, None), (256, 0), (1024, 2048))
    ]
    notes: list[str] = []
    kept, left = draft_out_of_context(cells, 64, {}, {}, notes)
    assert [(c.depth, c.ctx_size_draft) for c in kept] == [(0, 300), (256, None), (256, 0), (1024, 2048)]
    assert notes == [
        "draft out of context: p draft at depth 256 is not run: ctx_size_draft 300 cannot hold the depth, "
        "the prompt and n_predict 64 (320 tokens); raise ctx_size_draft"
    ]
    assert [(lo.cell, lo.reason) for lo in left] == [(cells[1], notes[0])]  # kept for the report


def test_without_ctx_size_draft_the_draft_models_own_context_is_the_limit_with_the_prompt_counted():
    """The pinned build has no -cd: the draft decodes in its model's context (its GGUF
    context_length; past it its positions are untrained). The longest counted prompt at the depth
    counts too. A head (EAGLE-3) reads the target's positions, and n-gram methods have no draft."""
    at = (("draft", 0), ("draft", 1024), ("draft", 1536), ("draft-eagle3", 1536))
    cells = [Cell(pair="p", model="t", draft="d", method=m, depth=d) for m, d in at]
    cells.append(Cell(pair="q", model="t", method="ngram-simple", depth=4096))
    notes: list[str] = []
    kept, left = draft_out_of_context(cells, 16, {"d": 2048, "t": 8192}, {("t", 1536): 2040}, notes)
    assert kept == [cells[0], cells[1], cells[3], cells[4]]
    assert [lo.cell for lo in left] == [cells[2]]
    assert notes == [
        "draft out of context: p draft at depth 1536 is not run: draft d's context (2048 tokens, its GGUF "
        "context_length) cannot hold the depth, the prompt and n_predict 16 (2056 tokens); use a draft "
        "trained on a longer context, or lower the depth"
    ]


def _counted(config, depth, tokens):
    """The rendered prompts, and each at ``depth`` counted at ``tokens`` (as the tokenizer would)."""
    base = rendered(config)
    return base + [with_context(p, depth, f"<ctx {depth}>\n\n", tokens) for p in base]


def test_a_prompt_longer_than_the_default_batch_gets_a_batch_holding_it_on_both_sides(tmp_path, llama_build):
    """llama-speculative-simple refuses a prompt over its batch (2048 by default): on an H200 every
    speculative sample at depth 4096 failed. Every run of a counted prompt over 2048 tokens gets -b
    of its tokens, the baseline and the draft alone too (the same batch on both sides); shorter
    prompts run as before."""
    sweep = {"method": ["draft"], "draft_max": [4], "depth": [0, 4096]}
    config = make_config(tmp_path, sweep=sweep, generation={"n_predict": 16, "ctx_size": 8192})
    plan = make_plan(config, llama_build, MODELS, _counted(config, 4096, 4286))
    assert {i.role for i in plan.measured} == {"baseline", "speculative", "draft"}
    for inv in plan.invocations:
        if inv.depth == 4096:
            assert inv.argv.count("-b") == 1 and inv.argv[inv.argv.index("-b") + 1] == "4288", inv.label()
        else:
            assert "-b" not in inv.argv, inv.label()
    gen = {"n_predict": 16, "ctx_size": 8192}
    server = make_config(tmp_path, runner="server", sweep=sweep, generation=gen)
    served = make_plan(server, llama_build, MODELS, _counted(server, 4096, 4286))
    assert not any("-b" in i.argv for i in served.invocations)  # llama-server splits a prompt in batches


def test_a_batch_size_too_small_for_a_counted_prompt_is_refused_before_running(tmp_path, llama_build):
    sweep = {"method": ["draft"], "draft_max": [4], "depth": [0, 4096], "batch_size": [2048]}
    config = make_config(tmp_path, sweep=sweep, generation={"n_predict": 16, "ctx_size": 8192})
    with pytest.raises(ConfigError, match=r"batch_size 2048 cannot hold prompt 'code-02' at depth 4096"):
        make_plan(config, llama_build, MODELS, _counted(config, 4096, 4286))

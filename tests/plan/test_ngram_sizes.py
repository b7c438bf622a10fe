"""n-gram size keys: probed spellings, cells and command lines, and why a lookup never drafted."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.builder.probe import flags_from_help, probe_binary
from specbench.execute.judge import never_drafted_reason
from specbench.parse.process import ParsedLog
from specbench.plan.sweep import make_plan
from tests.helpers.sweeps import MODELS, make_config, pairs, rendered


@pytest.fixture(scope="module")
def probed(llama_build):
    """The pinned build with its speculative binary probed now (a cached build.json may predate sizes)."""
    build = llama_build.model_copy(deep=True)
    info = build.binaries["speculative_simple"]
    info.flags = probe_binary(info.role, Path(info.path)).flags
    return build


def test_the_pinned_build_spells_sizes_per_method(probed):
    sizes = probed.binaries["speculative_simple"].flags.ngram_sizes
    assert sizes["ngram-simple"].n == "--spec-ngram-simple-size-n"
    assert sizes["ngram-simple"].m == "--spec-ngram-simple-size-m"
    assert sizes["ngram-map-k4v"].n == "--spec-ngram-map-k4v-size-n"
    assert "ngram-cache" not in sizes  # no size options


def test_older_help_without_size_options():
    text = "--spec-type [none|ngram-simple|ngram-cache]   type\n-n N   tokens\n"
    assert flags_from_help(text).ngram_sizes == {}


def test_sizes_are_cells_and_reach_the_command_line(tmp_path, probed):
    config = make_config(
        tmp_path,
        sweep={"method": ["ngram-simple", "ngram-cache"], "ngram_size_n": [3, 4], "ngram_size_m": [8]},
    )
    plan = make_plan(config, probed, MODELS, rendered(config))
    spec = [
        i for i in plan.measured if i.role == "speculative" and i.repetition == 0 and i.prompt_id == "code-02"
    ]
    assert [(i.method, i.ngram_size_n, i.ngram_size_m) for i in spec] == [
        ("ngram-simple", 3, 8),
        ("ngram-simple", 4, 8),
        ("ngram-cache", None, None),
    ]
    opts = pairs(spec[1].argv)
    assert opts["--spec-ngram-simple-size-n"] == "4" and opts["--spec-ngram-simple-size-m"] == "8"
    assert not any("size" in a for a in spec[2].argv)
    assert any("ngram-cache of this build has no size n option" in n for n in plan.notes)
    keys = {i.sample_key() for i in spec}
    assert len(keys) == 3  # part of the identity: --resume and the report keep them apart
    assert "size_n=4" in spec[1].label()


def test_default_sizes_are_not_passed(tmp_path, probed):
    config = make_config(tmp_path, sweep={"method": ["ngram-simple"]})
    spec = [
        i for i in make_plan(config, probed, MODELS, rendered(config)).measured if i.role == "speculative"
    ]
    assert spec and not any("size" in a for i in spec for a in i.argv)


def test_why_an_ngram_cell_never_drafted(tmp_path, probed):
    config = make_config(tmp_path, sweep={"method": ["ngram-simple"]})
    inv = next(
        i for i in make_plan(config, probed, MODELS, rendered(config)).measured if i.role == "speculative"
    )
    short = ParsedLog.model_validate({"kind": "speculative", "n_predict": 16, "n_drafted": 0, "n_accept": 0})
    reason = never_drafted_reason(inv, short)
    assert "only 16 tokens of history" in reason and "size_n + size_m + 1 = 61" in reason
    assert "ngram_size_n=[3,4]" in reason
    long = short.model_copy(update={"n_predict": 256})
    reason = never_drafted_reason(inv, long)
    assert "period of at most 12 tokens" in reason and "no earlier occurrence of the last 12 tokens" in reason
    small = inv.model_copy(update={"ngram_size_n": 3, "ngram_size_m": 4})
    assert "size_n + size_m + 1 = 8" in never_drafted_reason(small, short.model_copy(update={"n_predict": 5}))
    draft = inv.model_copy(update={"method": "draft"})
    assert never_drafted_reason(draft, short) == "speculation never engaged (n_drafted = 0)"
    cut = never_drafted_reason(draft.model_copy(update={"p_min": 0.9, "draft_min": 4}), short)
    assert "p_min=0.9 ends a draft" in cut and "draft_min=4 drops drafts shorter" in cut

"""Synthetic acceptance in the plan: which cells get a synth_len, how it is passed, and what the
config refuses (the process runner; a length llama.cpp would refuse at draft_max)."""

from __future__ import annotations

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.sweep import make_plan
from tests.helpers.sweeps import MODELS, make_config, pairs, rendered


def test_each_draft_cell_gets_a_synthetic_twin_per_length_that_fits(tmp_path, llama_build):
    config = make_config(
        tmp_path, runner="server",
        sweep={"method": ["draft", "ngram-simple"], "draft_max": [4, 8], "synth_len": [1.5, 3.0, 6.0]},
    )  # fmt: skip
    plan = make_plan(config, llama_build, MODELS, rendered(config))
    spec = [i for i in plan.measured if i.role == "speculative"]
    cells = {(i.method, i.draft_max, i.synth_len) for i in spec}
    # 6.0 > 4 + 1: llama.cpp refuses it at draft_max 4; n-gram cells get no synthetic twin
    assert cells == {
        ("draft", 4, None), ("draft", 8, None), ("ngram-simple", None, None),
        ("draft", 4, 1.5), ("draft", 4, 3.0), ("draft", 8, 1.5), ("draft", 8, 3.0), ("draft", 8, 6.0),
    }  # fmt: skip
    assert any("synth_len 6 at draft_max 4 skipped" in n for n in plan.notes)
    for inv in spec:
        opts = pairs(inv.argv)
        assert "--metrics" in inv.argv
        if inv.synth_len is None:
            assert "--spec-synth-len" not in inv.argv
        else:
            assert float(opts["--spec-synth-len"]) == inv.synth_len
            assert opts["--spec-type"] == "draft-simple" and opts["--spec-draft-n-max"] == str(inv.draft_max)
    # synthetic cells share the real cells' baseline: one baseline server for the target
    baselines = {tuple(i.argv) for i in plan.measured if i.role == "baseline"}
    assert len(baselines) == 1


def test_the_process_runner_and_impossible_lengths_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"sweep.synth_len.*runner: server"):
        make_config(tmp_path, sweep={"draft_max": [4], "synth_len": [2.0]})
    with pytest.raises(ConfigError, match=r"sweep.synth_len\[0\]"):
        make_config(tmp_path, runner="server", sweep={"draft_max": [4], "synth_len": [0.5]})


def test_synth_without_a_draft_model_cell_is_refused(tmp_path, llama_build):
    config = make_config(tmp_path, runner="server", sweep={"method": ["ngram-simple"], "synth_len": [2.0]})
    with pytest.raises(ConfigError, match="no cell that drafts with a model"):
        make_plan(config, llama_build, MODELS, rendered(config))

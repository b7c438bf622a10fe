"""Synthetic acceptance in the plan: which cells get a synth_len, how it is passed, and what the
config refuses (the process runner; a length llama.cpp would refuse at draft_max)."""

from __future__ import annotations

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.sweep import make_plan
from specbench.results.cell import is_synthetic
from tests.helpers.sweeps import MODELS, make_config, pairs, rendered
from tests.helpers.trees import pinned_build


def test_each_draft_cell_gets_a_synthetic_twin_per_length_that_fits(tmp_path, llama_build):
    config = make_config(
        tmp_path,
        runner="server",
        sweep={"method": ["draft", "ngram-simple"], "draft_max": [4, 8], "synth_len": [1.5, 3.0, 6.0]},
    )
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


# synth_rates: llama-server's --spec-synth-rates (rates by draft position), beside synth_len
RATES = [0.9, 0.7, 0.5, 0.25]


def test_synth_rates_reach_llama_server_and_make_the_draft_cells_synthetic(tmp_path):
    config = make_config(tmp_path, runner="server", synth_rates=RATES,
                         sweep={"method": ["draft", "ngram-simple"], "draft_max": [4]})  # fmt: skip
    plan = make_plan(config, pinned_build(tmp_path), MODELS, rendered(config))
    spec = {i.method: i for i in plan.measured if i.role == "speculative"}
    draft = spec["draft"]
    assert draft.synth_rates == "0.9,0.7,0.5,0.25" and is_synthetic(draft)
    assert (
        pairs(draft.argv)["--spec-synth-rates"] == "0.9,0.7,0.5,0.25" and "--spec-synth-len" not in draft.argv
    )
    # an n-gram cell drafts without a model: llama.cpp's synthetic acceptance is not asked of it
    assert spec["ngram-simple"].synth_rates is None and "--spec-synth-rates" not in spec["ngram-simple"].argv
    assert not is_synthetic(spec["ngram-simple"])
    assert all("--spec-synth-rates" not in i.argv for i in plan.measured if i.role == "baseline")


def test_synth_rates_of_another_length_than_draft_max_are_left_out_or_refused(tmp_path):
    config = make_config(tmp_path, runner="server", synth_rates=RATES, sweep={"draft_max": [4, 8]})
    plan = make_plan(config, pinned_build(tmp_path), MODELS, rendered(config))
    assert {i.draft_max for i in plan.measured if i.role == "speculative"} == {4}
    assert any("synth_rates of another length than draft_max" in n for n in plan.notes), plan.notes
    config = make_config(tmp_path, runner="server", synth_rates=RATES, sweep={"draft_max": [8]})
    with pytest.raises(ConfigError, match="every cell has synth_rates of another length than draft_max"):
        make_plan(config, pinned_build(tmp_path), MODELS, rendered(config))


@pytest.mark.parametrize(
    ("sections", "words"),
    [
        ({"synth_rates": RATES}, r"synth_rates: .*runner: server"),  # llama-speculative-simple lacks it
        (
            {"runner": "server", "synth_rates": RATES, "sweep": {"draft_max": [4], "synth_len": [2.0]}},
            "synth_rates and sweep.synth_len both set",
        ),
        ({"runner": "server", "synth_rates": [0.5, 0.7]}, "must not rise"),
        ({"runner": "server", "synth_rates": "0.9,1.5"}, "from 0 to 1"),
        ({"runner": "server", "synth_rates": []}, "list of probabilities"),
        ({"runner": "server", "sweep": {"synth_rates": [[0.9, "x"]]}}, "from 0 to 1"),
    ],
)
def test_synth_rates_that_llama_cpp_would_refuse_are_refused_by_the_config(tmp_path, sections, words):
    with pytest.raises(ConfigError, match=words):
        make_config(tmp_path, **sections)


def test_a_synth_rates_cell_is_synthetic_wherever_cells_are_read():
    """Runs, rows, history keys: one rule (results.cell.is_synthetic) for both synthetic axes."""
    assert is_synthetic({"synth_rates": "0.9,0.5"}) and is_synthetic({"synth_len": 2.0})
    assert not is_synthetic({"synth_len": None, "synth_rates": None}) and not is_synthetic({})

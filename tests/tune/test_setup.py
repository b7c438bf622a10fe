"""Tune fixes the llama.cpp options first: the combination whose probe cell decoded fastest."""

from types import SimpleNamespace

import specbench.tune.setup as setup
from tests.helpers.sweeps import make_config


def test_the_fastest_combination_is_fixed_and_no_longer_swept(tmp_path, monkeypatch):
    sets = [{"label": "plain", "args": ["--no-warmup"]}, {"label": "mlock", "args": ["--mlock"]}]
    config = make_config(tmp_path, sweep={"method": ["draft"], "flash_attn": ["on", "off"], "args": sets})
    rows = [
        SimpleNamespace(category="all", method="draft", spec_tps=tps, flash_attn=fa, args=args)
        for fa, args, tps in (("on", "plain", 30.0), ("off", "mlock", 41.0), ("on", "mlock", 35.0))
    ]
    monkeypatch.setattr(setup, "aggregate", lambda dirs: rows)
    fixed, choice = setup.choose_options(config, "p", tmp_path)
    assert choice == {"flash_attn": "off", "args": "mlock"}
    assert fixed.flash_attn == "off" and fixed.sweep.flash_attn == []
    assert [(n.label, n.args) for n in fixed.sweep.args] == [("mlock", ["--mlock"])]
    assert fixed.sweep.method == config.sweep.method  # the rest of the sweep as it was


def test_tune_keeps_the_pairs_models_and_the_ones_they_derive_from(tmp_path):
    """The draft a pair tunes is quantized from another model: that one is kept, in config order."""
    models = {name: {"path": f"{name}.gguf"} for name in ("big", "small", "mid")}
    models["q4"] = {"derive": {"from": "small", "quant": "Q4_0"}}
    config = make_config(tmp_path, models=models, pairs={"p": {"target": "big", "draft": "q4"}})
    assert list(setup.tune_config(config, "p").models) == ["big", "small", "q4"]  # mid: no model of the pair

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

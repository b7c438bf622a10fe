"""Settings that a config sets but that change nothing are said, not silently ignored."""

from __future__ import annotations

from specbench.execute.preparation import ignored_settings
from specbench.plan.config import load_config
from tests.helpers.configs import GOOD, write


def test_auto_repetition_keys_with_a_fixed_count_are_named(cfg_dir):  # noqa: F811
    path = write(cfg_dir, GOOD)
    assert ignored_settings(load_config(path)) == []
    (note,) = ignored_settings(load_config(path, ["max_repetitions=20", "min_repetitions=4"]))
    assert note.startswith("min_repetitions, max_repetitions are for `repetitions: auto`; with repetitions 3")
    (note,) = ignored_settings(load_config(path, ["precision=0.05"]))
    assert "precision is for" in note and "imprecise" in note
    auto = load_config(path, ["repetitions=auto", "max_repetitions=20", "precision=0.05"])
    assert ignored_settings(auto) == []

"""specbench.publish.pages: a speculative series' baselines."""

from specbench.publish.folders import Folders
from specbench.publish.pages import Model
from specbench.publish.series import Series


def _series(metric: str, method: str, **key: object) -> Series:
    key = {"target": "sha:t", "ngl": 0, "method": method, **key}
    return Series(machine="m", metric=metric, label=str(key), cell_id=str(key), pair="p", method=method,
                  setting="", prompts="all", generation="n_predict 64", key=key)  # fmt: skip


def test_a_baseline_is_one_of_the_cells_own_options_and_depth() -> None:
    """Every BASELINE_FIELDS axis tells baselines apart (the options and depth as well as ngl and the
    runner): a flash_attn=on cell at depth 0 is not judged against a flash_attn=off baseline, nor
    against one measured 4096 tokens deep; a key without depth (an older run) is at depth 0."""
    on = _series("baseline_tps", "none", flash_attn="on")
    off = _series("baseline_tps", "none", flash_attn="off")
    deep = _series("baseline_tps", "none", flash_attn="on", depth=4096)
    spec = _series("spec_tps", "draft", flash_attn="on", draft_max=8)
    model = Model(series=[on, off, deep, spec], folders=Folders())
    assert model.baseline_of(spec) == [on]

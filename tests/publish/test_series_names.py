"""A trend line is labelled by what was set: a process run's series says runner=process, not
runner=None (history leaves an axis at its default out of the stored key; issue 42)."""

from specbench.publish.pages import names
from specbench.publish.series import Series


def _series(key: dict, setting: str) -> Series:
    return Series(
        machine="m", metric="speedup", label="smol ngram-mod", cell_id=str(key), pair="smol",
        method="ngram-mod", setting=setting, prompts="chat-01", generation="n_predict 64", key=key,
    )  # fmt: skip


def test_an_axis_left_at_its_default_is_named_by_its_default():
    shown = [_series({}, "default"), _series({"runner": "server"}, "runner=server")]
    assert names(shown) == ["runner=process", "runner=server"]
    assert "None" not in " ".join(names([_series({}, "default"), _series({"parallel": 2}, "parallel=2")]))

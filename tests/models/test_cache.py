"""models.cache: how the cache's sizes read and what it lists (``specbench models list``/``cache``)."""

from __future__ import annotations

import pytest

from specbench.models.cache import hf_cache_dir, human_size, list_cached
from tests.models.tiny_gguf import write_tiny_gguf


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.0 KB"),
        (4_370_000_000, "4.4 GB"),
        (999_949_999_999, "999.9 GB"),
        (1_000_000_000_000, "1.0 TB"),
        (5e15, "5000.0 TB"),  # terabytes are the last unit: no petabytes
        (-2500, "-2.5 KB"),
    ],
)
def test_human_size_uses_decimal_units_up_to_terabytes(n, text):
    assert human_size(n) == text


def test_a_cached_split_set_is_listed_once_by_its_first_shard(empty_home):
    snapshot = hf_cache_dir() / "models--org--m" / "snapshots" / ("c" * 40)
    snapshot.mkdir(parents=True)
    for name in ("m-00002-of-00002.gguf", "m-00001-of-00002.gguf", "one.gguf"):
        write_tiny_gguf(snapshot / name)
    (snapshot / "gone.gguf").symlink_to(snapshot / "no-blob")  # a removed blob
    listed = [(c.kind, c.path.name, c.source, c.error) for c in list_cached()]
    assert listed == [
        ("hf", "m-00001-of-00002.gguf", f"org/m@{'c' * 12}", None),
        ("hf", "one.gguf", f"org/m@{'c' * 12}", None),
    ]

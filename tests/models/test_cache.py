"""models.cache: how the cache's sizes read (``specbench models list``/``cache``)."""

from __future__ import annotations

import pytest

from specbench.models.cache import human_size


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

"""The one rule for values that become paths, and ``inside``, the one join for them."""

from __future__ import annotations

import os

import pytest

from specbench.base.errors import PathError
from specbench.base.paths import UnsafePath, check_name, check_part, check_relative, inside


@pytest.mark.parametrize(
    "parts", [("/etc/passwd",), ("..", "x"), ("a/../../x",), ("a", "..", ".."), ("\\x",)]
)
def test_inside_refuses_a_join_that_leaves_the_root(tmp_path, parts):
    with pytest.raises(UnsafePath) as exc:
        inside(tmp_path / "root", *parts)
    assert "outside" in str(exc.value) and "\n" not in str(exc.value)


def test_inside_refuses_a_link_that_leads_out(tmp_path):
    (tmp_path / "root").mkdir()
    os.symlink(tmp_path, tmp_path / "root" / "up")
    with pytest.raises(UnsafePath):
        inside(tmp_path / "root", "up", "x.gguf")


def test_inside_joins_what_stays_inside(tmp_path):
    assert inside(tmp_path, "a", "b/c.gguf") == tmp_path / "a" / "b" / "c.gguf"
    assert inside(tmp_path, "a..b", ".hidden") == tmp_path / "a..b" / ".hidden"


@pytest.mark.parametrize(
    ("check", "good", "bad"),
    [
        (check_name, ["ci-rtx4090", "a.b_c", "Q4"],
         ["../x", "/x", "a/b", "..", ".x", "", "a b", "a\n", "x" * 256]),
        (check_part, ["m.gguf", ".hidden", "a b.gguf"],
         ["/x", "../x", "a/b", "..", ".", "", "a\\b", "a\x00", "C:/x"]),
        (check_relative, ["a/b.gguf", "*-Q4_0.gguf", "refs/pr/1"],
         ["/x", "../x", "a/../b", "a//b", "./a", "~/x"]),
    ],
)  # fmt: skip
def test_each_rule_names_the_value_in_one_line(check, good, bad):
    for value in good:
        assert check(value, "key") == value
    for value in bad:
        with pytest.raises(UnsafePath) as exc:
            check(value, "key")
        assert isinstance(exc.value, PathError) and isinstance(exc.value, ValueError)  # CLI and pydantic
        text = str(exc.value)
        assert text.startswith("key ") and "\n" not in text, text
        assert repr(value)[1:-1][:20] in text, text

"""The one Markdown table, JSON and CSV writer (specbench.base.formats)."""

import json

import pytest

from specbench.base.formats import csv_text, json_text, md_escape, md_table


def test_md_table_escapes_every_cell_and_aligns_numbers_right():
    lines = md_table(["name", "t/s"], [["a|b", "1.5"], ["two\nlines", "2"]], numeric=[False, True])
    assert lines == ["| name | t/s |", "|---|---:|", "| a\\|b | 1.5 |", "| two lines | 2 |"]
    assert md_escape("x|y\nz") == "x\\|y z"


def test_md_table_writes_verbatim_columns_as_they_are():
    lines = md_table(["option", "description"], [["`--format <table|md>`", "a|b"]], verbatim=[True])
    assert lines[-1] == "| `--format <table|md>` | a\\|b |"


def test_md_table_refuses_a_row_of_another_width():
    with pytest.raises(ValueError):
        md_table(["a", "b"], [["only one"]])


def test_json_text_is_strict_json():
    text = json_text({"x": float("inf"), "rows": [float("nan"), 1.5, {"y": -float("inf")}], "n": 3})
    assert json.loads(text) == {"x": None, "rows": [None, 1.5, {"y": None}], "n": 3}
    assert "Infinity" not in text and "NaN" not in text and text.startswith("{\n  ")


def test_csv_text_columns_in_order_of_first_appearance():
    text = csv_text([{"a": 1, "b": None}, {"a": 2, "c": "x,y"}])
    assert text == 'a,b,c\n1,,\n2,,"x,y"\n'

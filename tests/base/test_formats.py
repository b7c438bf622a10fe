"""The one Markdown table, JSON and CSV writer (specbench.base.formats)."""

import json
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

import specbench
from specbench.base.formats import csv_text, epoch_seconds, json_line, json_text, md_escape, md_table


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


def test_json_text_is_strict_json_and_names_what_it_nulled():
    text = json_text({"x": float("inf"), "rows": [float("nan"), 1.5, {"y": -float("inf")}], "n": 3})
    assert json.loads(text) == {
        "x": None, "not_finite": ["x"], "rows": [None, 1.5, {"y": None, "not_finite": ["y"]}], "n": 3
    }  # fmt: skip
    assert "Infinity" not in text and "NaN" not in text and text.startswith("{\n  ")


def test_json_text_writes_a_model_in_its_json_form_strictly():
    class Point(BaseModel):
        tps: float
        where: Path

    assert json.loads(json_text(Point(tps=float("nan"), where=Path("/x")))) == {
        "tps": None,
        "where": "/x",
        "not_finite": ["tps"],
    }
    assert json_line({"a": 1, "b": "é"}) == '{"a":1,"b":"é"}'


def test_json_text_spells_one_line_as_json_dumps_does():
    """Cache keys (a build's, a history cell's id) are hashes of this text: for the values they
    hold it must stay json.dumps's, or every cached build and recorded id would change."""
    data = {"b": [1, 2.5, None, "x/ü"], "a": {"c": True}}
    assert json_text(data, None, sort_keys=True) == json.dumps(data, sort_keys=True)
    assert json_text(data, None) == json.dumps(data)


# What writes JSON outside the writer: every JSON specbench writes or prints goes through
# specbench.base.formats (strict, and one place that guarantees it).
_STRAY_JSON = re.compile(r"\bjson\.dumps?\s*\(|\.model_dump_json\s*\(|\bdumps?\s*=\s*json\.|from json import")


def test_no_json_is_written_outside_the_one_writer():
    package = Path(specbench.__file__).parent
    stray = [
        f"{path.relative_to(package.parent)}:{n}: {line.strip()}"
        for path in sorted(package.rglob("*.py"))
        if path != package / "base" / "formats.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _STRAY_JSON.search(line)
    ]
    assert not stray, "write JSON with specbench.base.formats.json_text / json_line:\n" + "\n".join(stray)


def test_csv_text_columns_in_order_of_first_appearance():
    text = csv_text([{"a": 1, "b": None}, {"a": 2, "c": "x,y"}])
    assert text == 'a,b,c\n1,,\n2,,"x,y"\n'


def test_a_stored_time_stamp_reads_as_epoch_seconds_and_a_hand_edited_one_as_none():
    assert epoch_seconds("2025-01-01T00:00:10+00:00") == 1735689610.0
    assert epoch_seconds("2025-01-01T00:00:10Z") == 1735689610.0
    assert epoch_seconds("yesterday") is None

"""The text formats every table is written in, once: a Markdown table, strict JSON, CSV.

At the bottom so that the report files (``analysis``) and the commands (``cli``) write them alike.
No printing here: each returns text (or lines) for its caller to print or write.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any


def md_escape(text: str) -> str:
    """A table cell's text: a ``|`` would split the cell, a newline would end the table."""
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    numeric: Sequence[bool] = (),
    verbatim: Sequence[bool] = (),
) -> list[str]:
    """A GitHub-flavoured Markdown table as lines, every cell escaped. ``numeric[i]``: column i
    aligned right; ``verbatim[i]``: column i is Markdown already (a code span), written as it is."""
    right = [*numeric, *[False] * (len(headers) - len(numeric))]
    kept = [*verbatim, *[False] * (len(headers) - len(verbatim))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c if k else md_escape(c) for c, k in zip(cells, kept, strict=True)) + " |"

    return [line(headers), "|" + "|".join("---:" if r else "---" for r in right) + "|", *map(line, rows)]


def finite(data: Any) -> Any:
    """``data`` with every non-finite float as None: strict JSON has no Infinity or NaN."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [finite(v) for v in data]
    return data


def json_text(data: Any, indent: int | None = 2) -> str:
    """Strict JSON, indented by 2 (no trailing newline): what every ``--format json`` prints;
    ``indent=None``: one line (a GitHub Actions matrix read from an output)."""
    return json.dumps(finite(data), indent=indent, allow_nan=False)


def csv_text(records: Sequence[dict[str, Any]]) -> str:
    """Records as CSV: the columns in order of first appearance, None an empty cell, every value as
    Python writes it (an integer column keeps 4, never 4.0)."""
    out = io.StringIO()
    writer = csv.DictWriter(
        out, fieldnames=list(dict.fromkeys(k for r in records for k in r)), lineterminator="\n"
    )
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue()

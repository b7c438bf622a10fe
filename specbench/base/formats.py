"""The text formats specbench writes, once: a Markdown table, strict JSON, CSV (text, never printed)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from specbench.base.redact import redact, redact_data


def md_escape(text: str) -> str:
    """A table cell's text: a ``|`` would split the cell, a newline would end the table."""
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    numeric: Sequence[bool] = (),
    verbatim: Sequence[bool] = (),
) -> list[str]:
    """A GitHub-flavoured Markdown table as lines, every cell redacted and escaped. ``numeric[i]``: column i
    aligned right; ``verbatim[i]``: column i is Markdown already (a code span), written as it is."""
    right = [*numeric, *[False] * (len(headers) - len(numeric))]
    kept = [*verbatim, *[False] * (len(headers) - len(verbatim))]

    def line(cells: Sequence[str]) -> str:
        text = " | ".join(redact(c) if k else md_escape(redact(c)) for c, k in zip(cells, kept, strict=True))
        return "| " + text + " |"

    return [line(headers), "|" + "|".join("---:" if r else "---" for r in right) + "|", *map(line, rows)]


NOT_FINITE = "not_finite"  # the key that names an object's fields written as null for inf or nan


def finite(data: Any) -> Any:
    """``data`` as strict JSON holds it: a non-finite float None, named in its object's ``not_finite``."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, BaseModel):
        return finite(data.model_dump(mode="json"))
    if isinstance(data, dict):
        out = {k: finite(v) for k, v in data.items()}
        bad = [str(k) for k, v in data.items() if isinstance(v, float) and not math.isfinite(v)]
        if bad:
            known = out.get(NOT_FINITE)
            out[NOT_FINITE] = sorted({*(known if isinstance(known, list) else []), *bad})
        return out
    if isinstance(data, list | tuple):
        return [finite(v) for v in data]
    return data


def json_text(
    data: Any,
    indent: int | None = 2,
    *,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    ensure_ascii: bool = True,
    default: Callable[[Any], Any] | None = None,
    redacted: bool = True,
) -> str:
    """The one JSON writer (files, output, requests, hashed keys): strict (``finite``: jq refuses NaN),
    every string ``redact``ed unless ``redacted=False`` (what is used, not recorded: a request's body).
    ``indent=None``: one line as ``json.dumps`` spells it, so a hash of it stays what it was."""
    data = redact_data(finite(data)) if redacted else finite(data)
    return json.dumps(
        data, indent=indent, allow_nan=False, sort_keys=sort_keys, separators=separators,
        ensure_ascii=ensure_ascii, default=default,
    )  # fmt: skip


def json_line(data: Any) -> str:
    """One compact line (no spaces, UTF-8 as it is), as a JSON Lines file (samples.jsonl) holds it."""
    return json_text(data, None, separators=(",", ":"), ensure_ascii=False)


def csv_text(records: Sequence[dict[str, Any]]) -> str:
    """Records as CSV: the columns in order of first appearance, None an empty cell, every value as
    Python writes it (an integer column keeps 4, never 4.0), a text redacted."""
    out = io.StringIO()
    writer = csv.DictWriter(
        out, fieldnames=list(dict.fromkeys(k for r in records for k in r)), lineterminator="\n"
    )
    writer.writeheader()
    writer.writerows({k: redact(v) if isinstance(v, str) else v for k, v in r.items()} for r in records)
    return out.getvalue()


def now_iso() -> str:
    """The time stamp every record carries: UTC, to the second, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def epoch_seconds(at: str) -> float | None:
    """A stored time stamp as seconds since the epoch (None: unreadable, as a hand-edited one may be)."""
    try:
        return datetime.fromisoformat(at).timestamp()
    except ValueError:
        return None

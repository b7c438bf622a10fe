"""The compatibility table of docs/build.md: which llama.cpp trees specbench was run on and what each
did, generated from tests/data/compat/trees.json, which the integration tier
(tests/builder/test_trees_integration.py) writes when SPECBENCH_RECORD_COMPAT=1. Regenerate the
docs table with ``python -m tests.helpers.compat``; tests/test_docs.py checks that it did not drift.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPAT_JSON = ROOT / "tests" / "data" / "compat" / "trees.json"
DOCS_PAGE = ROOT / "docs" / "build.md"
BEGIN = "<!-- compat-table: generated from tests/data/compat/trees.json by python -m tests.helpers.compat -->"
END = "<!-- compat-table: end -->"
COLUMNS = ("Tree", "Era", "Commit", "Programs", "Works", "Refused (why)")


def load_rows(path: Path = COMPAT_JSON) -> list[dict]:
    if not path.is_file():
        return []
    return json.loads(path.read_text())["trees"]


def record_row(row: dict, path: Path = COMPAT_JSON) -> None:
    """Put one tree's outcome into the JSON (replacing that tree's old row), in a stable order."""
    rows = [r for r in load_rows(path) if r["id"] != row["id"]] + [row]
    rows.sort(key=lambda r: r["order"])
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"trees": rows}, indent=2, sort_keys=True, allow_nan=False)
    path.write_text(text + "\n")


def _cell(items: list[str] | str) -> str:
    text = "; ".join(items) if isinstance(items, list) else items
    return (text or "-").replace("|", "\\|").replace("\n", " ")


def render_table(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        programs = [f"{role}: {name}" for role, name in sorted(r["programs"].items())]
        commit = f"`{r['commit'][:8]}`" if r["commit"] else "-"
        cells = [r["tree"], r["era"], commit, programs, r["works"], r["refused"]]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def docs_table(page: str) -> str | None:
    """The generated table as it stands in the docs page (None when its markers are missing)."""
    if BEGIN not in page or END not in page:
        return None
    return page.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def update_docs(page_path: Path = DOCS_PAGE, json_path: Path = COMPAT_JSON) -> None:
    page = page_path.read_text()
    if docs_table(page) is None:
        sys.exit(f"error: {page_path} has no {BEGIN!r} ... {END!r} markers; put them where the table goes")
    head, rest = page.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    page_path.write_text(f"{head}{BEGIN}\n{render_table(load_rows(json_path))}\n{END}{tail}")


if __name__ == "__main__":
    update_docs()

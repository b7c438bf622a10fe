"""The table of llama.cpp options: one entry per option, and what is generated from it."""

from __future__ import annotations

import ast
from pathlib import Path

from specbench.base.llamaopts import BY_KEY, OPTIONS, applies, options_table

DOCS = Path(__file__).resolve().parents[2] / "docs" / "llama-options.md"
SPECBENCH = Path(__file__).resolve().parents[2] / "specbench"
# The table's names still written out elsewhere, none of them a lookup of the table.
SPELT_ELSEWHERE = {
    "analysis/cells.py": {"method", "draft_max", "ngl", "ngld"},  # report.json's documented first keys
    "builder/options.py": {"load_mode"},  # a Kind (how a value is passed), not the option's key
    "tune/calibrate.py": {"-ngl", "ngl"},  # llama-bench's own argv; a field of calibration.json
}


def test_the_docs_table_is_the_generated_one():
    text = DOCS.read_text()
    start = text.index("-->\n", text.index("<!-- options table")) + len("-->\n")
    assert text[start : text.index("<!-- end of options table -->")] == options_table(), (
        "docs/llama-options.md: paste specbench.base.llamaopts.options_table() between its markers"
    )


def test_keys_and_spellings_are_unique_and_described():
    keys = [o.key for o in OPTIONS]
    spellings = [s for o in OPTIONS for s in (*o.spellings, *o.off)]
    assert len(set(keys)) == len(keys) and len(set(spellings)) == len(spellings)
    assert all(o.description and o.values for o in OPTIONS)


def test_an_option_applies_where_llama_cpp_reads_it():
    mod, draft = BY_KEY["ngram_mod_n_max"], BY_KEY["threads_draft"]
    assert applies(mod, "ngram-mod", False) and applies(mod, "draft+ngram-mod", True)
    assert not applies(mod, "ngram-simple", False) and not applies(mod, "draft", True)
    assert applies(draft, "draft", True) and not applies(draft, "ngram-mod", False)
    assert applies(BY_KEY["flash_attn"], "none", False)


def test_no_option_name_is_spelt_outside_the_table():
    names = {n for o in OPTIONS for n in (o.key, *o.spellings)}
    found = {}
    for path in sorted(SPECBENCH.rglob("*.py")):
        rel = path.relative_to(SPECBENCH).as_posix()
        tree = ast.parse(path.read_text())
        texts = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        if rel != "base/llamaopts.py" and (hits := (texts & names) - SPELT_ELSEWHERE.get(rel, set())):
            found[rel] = sorted(hits)
    assert not found, (
        f"read these from the entries of specbench.base.llamaopts (GPU_LAYERS.spellings[0]): {found}"
    )

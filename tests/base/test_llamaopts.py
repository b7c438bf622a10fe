"""The table of llama.cpp options: one entry per option, and what is generated from it."""

from __future__ import annotations

from pathlib import Path

from specbench.base.llamaopts import BY_KEY, OPTIONS, applies, options_table

DOCS = Path(__file__).resolve().parents[2] / "docs" / "llama-options.md"


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

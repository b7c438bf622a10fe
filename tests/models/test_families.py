"""The curated draft list shipped with specbench."""

from __future__ import annotations

import fnmatch

import pytest

from specbench.models.families import load_families


def test_every_entry_names_a_repo_a_pattern_a_family_and_a_size():
    families = load_families()
    wanted = {"llama3", "qwen2.5", "qwen3", "gemma3", "mistral-small", "deepseek-r1-distill-qwen", "phi3"}
    assert wanted <= set(families)
    for name, fam in families.items():
        assert name and fam.about and fam.drafts
        for d in fam.drafts:
            owner, _, repo = d.repo.partition("/")
            assert owner and repo and "/" not in repo
            assert d.pattern.endswith(".gguf") and "*" in d.pattern
            assert fnmatch.fnmatch(f"x{d.pattern.replace('*', '')}", d.pattern)
            assert 1e7 < d.params < 1e11  # a draft: between 10M and 100B parameters


def test_malformed_entries_are_refused():
    with pytest.raises(ValueError, match="must look like OWNER/NAME"):
        load_families("families: {x: {about: a, drafts: [{repo: nope, pattern: '*.gguf', params: 1}]}}")
    with pytest.raises(ValueError):
        load_families("families: {x: {about: a, drafts: [{repo: a/b, pattern: '*.gguf'}]}}")  # no size
    with pytest.raises(ValueError):
        load_families("families: {x: {about: a, drafts: []}}")

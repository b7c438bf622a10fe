"""Resolving a config's models: local paths, derived quantizations, and the errors in between."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.base.errors import ModelError
from specbench.models.cache import models_dir
from specbench.models.resolve import resolve_models
from specbench.models.spec import DeriveSource, ModelSpec


def _one_line(exc: pytest.ExceptionInfo) -> str:
    assert "\n" not in str(exc.value)
    return str(exc.value)


def test_path_relative_to_the_config_folder(tmp_path, empty_home):
    from tests.models.tiny_gguf import write_tiny_gguf

    write_tiny_gguf(tmp_path / "cfg" / "models" / "t.gguf")
    models = resolve_models({"t": ModelSpec(path="models/t.gguf")}, base_dir=tmp_path / "cfg")
    assert models["t"].path == tmp_path / "cfg" / "models" / "t.gguf"
    assert models["t"].source == "path:models/t.gguf" and models["t"].revision is None
    with pytest.raises(ModelError) as exc:
        resolve_models({"t": ModelSpec(path="t.gguf")}, base_dir=tmp_path)
    assert _one_line(exc).startswith("model 't': file not found") and "config's folder" in str(exc.value)


def test_path_to_a_split_set_missing_a_shard(tmp_path, empty_home):
    from tests.models.tiny_gguf import write_tiny_gguf

    first = write_tiny_gguf(tmp_path / "s.gguf", n_tensors=2, split_max_tensors=1)
    assert (
        resolve_models({"s": ModelSpec(path=str(first))}, tmp_path)["s"].files[1].name
        == "s-00002-of-00002.gguf"
    )
    (tmp_path / "s-00002-of-00002.gguf").unlink()
    with pytest.raises(ModelError) as exc:
        resolve_models({"s": ModelSpec(path=str(first))}, tmp_path)
    assert "missing 1 of 2 shards" in _one_line(exc)


def test_derive_errors(tmp_path, empty_home):
    from tests.models.tiny_gguf import write_tiny_gguf

    write_tiny_gguf(tmp_path / "t.gguf")
    base = ModelSpec(path="t.gguf")
    with pytest.raises(ModelError) as exc:
        resolve_models({"a": ModelSpec(derive=DeriveSource(from_="nope", quant="F16"))}, tmp_path)
    assert "derives from unknown model 'nope'" in _one_line(exc)
    loop = {
        "a": ModelSpec(derive=DeriveSource(from_="b", quant="F16")),
        "b": ModelSpec(derive=DeriveSource(from_="a", quant="F16")),
    }
    with pytest.raises(ModelError) as exc:
        resolve_models(loop, tmp_path)
    assert "cycle: a -> b -> a" in _one_line(exc)
    with pytest.raises(ModelError) as exc:
        resolve_models({"t": base, "d": ModelSpec(derive=DeriveSource(from_="t", quant="F16"))}, tmp_path)
    assert "needs llama-quantize: run `specbench build`" in _one_line(exc)


@pytest.mark.slow
def test_quantize_failure_is_one_line_and_caches_nothing(tmp_path, empty_home, llama_build):
    from tests.models.tiny_gguf import write_tiny_gguf

    write_tiny_gguf(tmp_path / "t.gguf")  # no llama hyper-parameters: llama-quantize refuses it
    specs = {"t": ModelSpec(path="t.gguf"), "d": ModelSpec(derive=DeriveSource(from_="t", quant="F16"))}
    with pytest.raises(ModelError) as exc:
        resolve_models(specs, tmp_path, build=llama_build)
    text = _one_line(exc)
    assert "llama-quantize t.gguf -> F16 failed (exit 1)" in text and "llama.embedding_length" in text
    assert not list((models_dir() / "derived").rglob("*.gguf"))


@pytest.mark.slow
def test_derived_f32_target(smol_q4, smol_f32, llama_build):
    meta = smol_f32.metadata
    assert meta.file_type == "F32" and meta.parameter_count == smol_q4.metadata.parameter_count
    assert smol_f32.size_bytes > 4 * meta.parameter_count  # every weight now 4 bytes
    assert smol_f32.source == "derive:smol_q4->F32"
    assert smol_f32.path.parent.name == f"{smol_q4.sha256[:16]}-F32"
    mtime = smol_f32.path.stat().st_mtime_ns
    from tests.fixtures.models import SMOL_Q4

    renamed = {"q": SMOL_Q4, "f": ModelSpec(derive=DeriveSource(from_="q", quant="F32"))}
    again = resolve_models(renamed, Path("."), build=llama_build)["f"]
    assert again.path == smol_f32.path and again.path.stat().st_mtime_ns == mtime  # not derived twice

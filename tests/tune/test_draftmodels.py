"""What `drafts` makes of an argument before anything is priced (``tune.draftmodels``)."""

from __future__ import annotations

from specbench.tune.draftmodels import is_hub_name, models_of


def test_what_an_argument_names():
    assert is_hub_name("bartowski/Llama-3.2-1B-Instruct-GGUF")
    assert is_hub_name("org/repo/sub/file.gguf")
    assert not is_hub_name("models/file.gguf")  # a local path, even when missing
    assert not is_hub_name("./org/repo") and not is_hub_name("/abs/path") and not is_hub_name("x.gguf")


def test_a_folder_without_ggufs_and_a_missing_file_are_listed_with_the_reason(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    [empty] = models_of(str(tmp_path), None, None)
    assert not empty.row.compatible and "holds no .gguf file" in (empty.row.reason or "")
    missing = tmp_path / "gone.gguf"
    [row] = [m.row for m in models_of(str(missing), None, None)]
    assert not row.compatible and row.reason and "gone.gguf" in row.reason


def test_a_truncated_local_candidate_is_listed_as_such(tmp_path):
    """Its header reads, its tensors do not fit in the file: read_local_header's one check refuses it."""
    import os

    from tests.models.tiny_gguf import write_tiny_gguf

    cut = write_tiny_gguf(tmp_path / "cut.gguf")
    os.truncate(cut, cut.stat().st_size - 8)
    [judged] = models_of(str(cut), None, None)
    assert not judged.row.compatible and "cut.gguf is truncated: tensor data needs" in (
        judged.row.reason or ""
    )
    assert judged.header is None and judged.sha256 is None  # neither priced nor timed

"""A process reads each GGUF header once: the same file, unchanged, gives the same reader; a file
written again is read again (models/gguffile.py)."""

from __future__ import annotations

import os

from specbench.models.gguffile import open_gguf
from tests.models.tiny_gguf import vocab, write_tiny_gguf


def test_an_unchanged_file_is_read_once_and_a_rewritten_one_again(tmp_path):
    path = write_tiny_gguf(tmp_path / "m.gguf", tokens=vocab(300))
    first = open_gguf(path)
    assert open_gguf(path) is first
    write_tiny_gguf(path, tokens=vocab(400))  # another vocabulary: another size
    os.utime(path, ns=(1, 1))  # and another time, whatever the file system's resolution
    again = open_gguf(path)
    assert again is not first
    assert len(again.fields["tokenizer.ggml.tokens"].data) == 400

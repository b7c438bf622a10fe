"""files.py: a kept file is whole or absent; a failure mid-write leaves the old one untouched."""

from __future__ import annotations

import stat

import pytest

from specbench.base.files import TMP_PREFIX, atomic_path, write_atomic


def test_write_atomic_replaces_a_file_whole_with_normal_permissions(tmp_path):
    dest = tmp_path / "deep" / "er" / "manifest.json"
    write_atomic(dest, "old")
    write_atomic(dest, "néw")
    assert dest.read_text(encoding="utf-8") == "néw"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o644  # not mkstemp's 0600
    write_atomic(dest, b"\x00bytes")
    assert dest.read_bytes() == b"\x00bytes"
    assert [p.name for p in dest.parent.iterdir()] == ["manifest.json"]  # no temporary left behind


def test_a_failure_mid_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    dest = tmp_path / "model.gguf"
    dest.write_text("complete old file")
    with pytest.raises(RuntimeError), atomic_path(dest) as tmp:
        tmp.write_text("half of a new")
        assert tmp.name.startswith(TMP_PREFIX) and tmp.parent == dest.parent
        raise RuntimeError("disk full")
    assert dest.read_text() == "complete old file"
    assert [p.name for p in tmp_path.iterdir()] == ["model.gguf"]

"""The build cache's folder names."""

from __future__ import annotations

from specbench.builder.buildplan import build_dir_for, build_key


def test_a_marker_commit_of_any_text_names_a_folder_inside_the_build_cache(tmp_path, monkeypatch):
    """A source tree's marker file is anyone's text: ``../../../x`` must not lead the build folder out."""
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path))
    for ident in ("../../../../x", "/etc/passwd", "a/b"):
        key = build_key(ident, "cpu", [], isa=[])
        assert "/" not in key and ".." not in key, key
        assert build_dir_for(key).parent == tmp_path / "builds"
    assert build_key("0123456789abcdef" * 2, "cpu", [], isa=[]).startswith("0123456789ab-cpu-")

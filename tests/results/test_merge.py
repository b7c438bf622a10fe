"""A merged run keeps its shards only inside its own folder."""

from __future__ import annotations

import pytest

from specbench.base.errors import PathError
from specbench.results.merge import keep_shard


@pytest.mark.parametrize("name", ["../x", "/tmp/x", "..", "a/../../x"])
def test_a_shard_name_that_leaves_the_merged_folder_is_refused(tmp_path, name):
    src, dst = tmp_path / "s1", tmp_path / "out" / "merged"
    (src / "raw").mkdir(parents=True)
    (src / "manifest.json").write_text("{}")
    (src / "raw" / "a.stdout").write_text("x")
    dst.mkdir(parents=True)
    with pytest.raises(PathError):
        keep_shard(src, dst, name)
    assert [p for p in tmp_path.rglob("*") if p != dst and dst not in p.parents and src not in p.parents
            and p not in (src, tmp_path / "out")] == []  # fmt: skip

"""specbench.builder.buildinfo: which program a role runs in trees of other eras, and what a tree
lacks, refused in one line that says whether a rebuild can help."""

from __future__ import annotations

import pytest

from specbench.base.errors import BuildError
from tests.helpers.trees import IK_PROGRAMS, tree_build


def test_the_speculative_program_is_the_one_the_tree_has(tmp_path):
    both = tree_build(tmp_path / "a", {**IK_PROGRAMS, "speculative_simple": "llama-speculative-simple"},
                      "ik-0.1.5-llama-speculative.txt")  # fmt: skip
    assert both.speculative().name == "llama-speculative-simple"
    assert both.speculative("speculative").name == "llama-speculative"
    ik = tree_build(tmp_path / "b", IK_PROGRAMS, "ik-0.1.5-llama-speculative.txt")
    assert ik.speculative().name == "llama-speculative"


def test_a_program_the_tree_lacks_is_refused_without_rebuild_advice(tmp_path):
    ik = tree_build(tmp_path / "b", IK_PROGRAMS, "ik-0.1.5-llama-speculative.txt")
    with pytest.raises(BuildError) as info:
        ik.speculative("speculative_simple")
    message = str(info.value)
    assert "has no speculative_simple program (llama-speculative-simple, llama speculative-simple)" in message
    assert "no rebuild adds one" in message and "--force" not in message and "\n" not in message
    server_only = tree_build(tmp_path / "c", {"server": "llama-server"}, "ik-0.1.5-llama-speculative.txt")
    with pytest.raises(BuildError, match="has no speculative program .*: run it with `runner: server`"):
        server_only.speculative()
    # a build recorded before specbench kept the tree's programs: a rebuild may find the role
    old = tree_build(
        tmp_path / "d", {"server": "llama-server"}, "ik-0.1.5-llama-speculative.txt", programs=None
    )
    with pytest.raises(BuildError, match="rebuild with `specbench build --force`"):
        old.binary("bench")

"""Real llama.cpp commits of a git history made from the pinned tree (tests/fixtures/llama_history):
each commit is exported and built once, cached by commit, and the second build of the pair reuses
the first's compiled objects (the shared work area). Costs one full build the first time on a
machine (minutes on 2 cores); later sessions find every commit in the cache (fixed shas)."""

from __future__ import annotations

import pytest

from specbench.base.paths import builds_dir
from specbench.builder.builder import ensure_build
from specbench.builder.buildinfo import BuildInfo
from specbench.builder.buildplan import BUILD_JSON

pytestmark = pytest.mark.slow


def test_commits_of_a_history_build_once_and_reuse_each_others_objects(llama_history):
    h = llama_history
    first = ensure_build(backend="cpu", source=h.repo, ref=h.shas[0])
    slow = ensure_build(backend="cpu", source=h.repo, ref="main~1")  # the commit that adds the delay
    for info, sha in ((first, h.shas[0]), (slow, h.shas[2])):
        assert info.commit == sha and info.origin == "git-ref"
        assert sha[:7] in info.binaries["completion"].version  # --version names the commit built
        assert set(info.binaries) >= {"completion", "speculative_simple", "server"}
    assert slow.ref == "main~1" and first.key != slow.key and first.work_area == slow.work_area
    # whichever of the two was built second recompiled what the one-line change touches, not the tree:
    # far fewer steps than the full compile that first filled their shared work area (whichever build
    # that was: other tests build commits of this history too, in an order the suite decides)
    full = max(
        b.build_steps or 0
        for b in (BuildInfo.load(f) for f in builds_dir().glob(f"*/{BUILD_JSON}"))
        if b.work_area == first.work_area
    )
    assert min(first.build_steps, slow.build_steps) * 5 < full, (first.build_steps, slow.build_steps, full)
    again = ensure_build(backend="cpu", source=h.repo, ref=h.shas[2][:12])
    assert again.key == slow.key and again.commit == slow.commit  # by commit: cached
    assert again.ref == h.shas[2][:12]  # each caller's record keeps the ref it gave

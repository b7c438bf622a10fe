"""Warmups are judged (issue 31): one that crashes drops, at once, every cell that needs its model
or setting (their samples recorded `failed` with its reason, not run), and a run left with no cell
stops before its first measured sample. Stand-in binaries from tests/fakebins: a real llama.cpp
does not crash here on demand (the AMX crash needs an AMX CPU)."""

from __future__ import annotations

import pytest

from specbench.base.errors import RunError
from specbench.execute.runner import execute
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.helpers.fakeruns import inv, manifest, process


def _draft_alone(binary: str, **kw):
    return inv(binary, role="draft", model="draft", pair=None, draft=None, method="none", draft_max=None,
               draft_min=None, p_min=None, ngld=None, binary_role="completion", **kw)  # fmt: skip


def test_a_crashing_draft_warmup_drops_every_cell_that_loads_it(tmp_path, env_info):  # noqa: F811
    plan = [
        inv("plain", role="baseline", pair=None, draft=None, method="none", draft_max=None, draft_min=None,
            p_min=None, ngld=None, binary_role="completion", warmup=True),
        _draft_alone("segfault", warmup=True),
        inv("plain", role="baseline", pair=None, draft=None, method="none", draft_max=None, draft_min=None,
            p_min=None, ngld=None, binary_role="completion", prompt_id="p1"),
        *(inv("segfault", prompt_id="p1", rep=r) for r in range(3)),
        *(_draft_alone("segfault", prompt_id="p1", rep=r) for r in range(3)),
    ]  # fmt: skip
    run_dir = tmp_path / "run"
    events = []
    execute(process(plan), run_dir, manifest(run_dir, env_info), progress=events.append)
    samples = load_samples(run_dir)
    dead = [s for s in samples if s.role != "baseline"]
    assert len(dead) == 6 and all(s.status == "failed" for s in dead)
    assert all(s.invalid_reason == "not run: its warmup failed: killed by SIGSEGV" for s in dead)
    assert all(s.stderr_path is None and s.wall_s == 0.0 for s in dead)  # not run: no log, no time
    assert [s.status for s in samples if s.role == "baseline"] == ["ok"]
    warmups = [e for e in events if e.kind == "warmup"]
    assert [e.sample.status for e in warmups] == ["ok", "failed"]  # printed as failed, with its reason
    assert warmups[1].sample.invalid_reason == "killed by SIGSEGV"
    dropped = [e for e in events if e.kind == "dropped"]
    assert len(dropped) == 1 and "dropped 6 sample(s)" in dropped[0].message
    assert "pair" in dropped[0].message and "model draft" in dropped[0].message
    assert sum(e.kind == "begin" for e in events) == 3  # two warmups and the baseline: nothing else ran
    assert load_manifest(run_dir).status == "complete"


def test_a_run_whose_every_cell_is_dead_stops_before_measuring(tmp_path, env_info):  # noqa: F811
    plan = [
        inv("segfault", warmup=True),
        *(inv("segfault", prompt_id="p1", rep=r) for r in range(3)),
    ]
    run_dir = tmp_path / "run"
    events = []
    with pytest.raises(
        RunError, match=r"every cell's warmup failed \(killed by SIGSEGV\); nothing was measured"
    ):
        execute(process(plan), run_dir, manifest(run_dir, env_info), progress=events.append)
    assert sum(e.kind == "begin" for e in events) == 1  # the warmup only
    assert [s.status for s in load_samples(run_dir)] == ["failed"] * 3
    man = load_manifest(run_dir)
    assert man.status == "failed" and "every cell's warmup failed" in man.status_reason


def test_a_warmup_that_never_speculated_is_shown_but_its_cells_still_run(tmp_path, env_info):  # noqa: F811
    plan = [inv("nodraft", warmup=True), inv("nodraft", prompt_id="p1")]
    run_dir = tmp_path / "run"
    events = []
    execute(process(plan), run_dir, manifest(run_dir, env_info), progress=events.append)
    warm = next(e for e in events if e.kind == "warmup")
    assert warm.sample.status == "invalid" and "never engaged" in warm.sample.invalid_reason
    assert [s.status for s in load_samples(run_dir)] == ["invalid"]  # measured: another prompt may draft

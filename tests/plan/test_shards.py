"""Shards: parsing i/N, Slurm's variables, and how a plan is dealt (whole cells with their
baselines, balanced, deterministic, runner labels kept apart) on the real build's flags."""

from __future__ import annotations

from collections import Counter

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.shards import (
    Shard,
    assign,
    cells_of,
    cut,
    matrix,
    parse_shard,
    restrict,
    runs_on_rule,
    shard_from_env,
)
from specbench.plan.sweep import make_plan
from specbench.results.cell import alone_of, baseline_of, draft_alone_of
from tests.helpers.sweeps import MODELS, make_config, rendered


@pytest.mark.parametrize("text", ["0/3", "4/3", "a/b", "3", "", "1/0", "-1/3"])
def test_bad_shard_is_refused(text):
    with pytest.raises(ConfigError, match="shard"):
        parse_shard(text)


def test_shard_parses():
    assert parse_shard("2/3") == Shard(2, 3) and parse_shard(" 3 / 3 ").label == "3/3"


def test_slurm_array_chooses_the_shard():
    assert shard_from_env({}) is None
    assert shard_from_env({"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4"}) == Shard(2, 4)
    zero_based = {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0"}
    assert shard_from_env(zero_based) == Shard(1, 4)
    with pytest.raises(ConfigError, match="SLURM"):
        shard_from_env({"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"})


def _plan(tmp_path, llama_build, **sections):
    cfg = make_config(tmp_path, **sections)
    return cfg, make_plan(cfg, llama_build, MODELS, rendered(cfg))


def test_every_cell_in_one_shard_with_what_it_is_judged_with(tmp_path, llama_build):
    cfg, plan = _plan(tmp_path, llama_build)
    shards = assign(plan, 3, runs_on=runs_on_rule(cfg))
    dealt = Counter(c for s in shards for c in s.cells)
    assert sorted(dealt) == sorted(cells_of(plan)) and set(dealt.values()) == {1}
    spec_seen = Counter()
    for s in shards:
        part = restrict(plan, s.shard, s.cells)
        assert {i.shard for i in part.invocations} == {s.shard.label}
        alone = {(alone_of(i), i.prompt_id, i.repetition) for i in part.measured if i.role != "speculative"}
        for inv in part.measured:
            if inv.role != "speculative":
                continue
            spec_seen[inv.model_copy(update={"shard": None}).sample_key()] += 1
            assert (baseline_of(inv), inv.prompt_id, inv.repetition) in alone
            if draft_alone_of(inv):
                assert (draft_alone_of(inv), inv.prompt_id, inv.repetition) in alone
        assert part.warmups, "each shard warms up what it runs"
    assert set(spec_seen) == {i.sample_key() for i in plan.measured if i.role == "speculative"}
    assert set(spec_seen.values()) == {1}


def test_same_config_same_shards(tmp_path, llama_build):
    cfg, plan = _plan(tmp_path, llama_build)
    _, again = _plan(tmp_path, llama_build)
    assert matrix(plan, cfg, 3) == matrix(again, cfg, 3)


def test_balanced_by_estimated_time(tmp_path, llama_build):
    cfg, plan = _plan(
        tmp_path, llama_build, sweep={"method": ["draft", "ngram-simple"], "draft_max": [2, 4, 8, 16, 32]}
    )
    est = [e["est_s"] for e in matrix(plan, cfg, 3)["include"]]
    assert max(est) <= 1.25 * min(est), est


def test_runs_on_keeps_gpu_cells_apart(tmp_path, llama_build):
    cfg, plan = _plan(tmp_path, llama_build, sweep={"method": ["draft"], "draft_max": [4, 8], "ngl": [0, 99]},
                      runs_on={"ngl": {99: ["self-hosted", "gpu"]}})  # fmt: skip
    include = matrix(plan, cfg, 2)["include"]
    gpu = [e for e in include if e.get("runs_on") == ["self-hosted", "gpu"]]
    assert len(gpu) == 1 and all("ngl=99" in c for c in gpu[0]["cells"])
    assert all("ngl=0" in c for e in include if e not in gpu for c in e["cells"])


def test_more_shards_than_cells_is_refused(tmp_path, llama_build):
    cfg, plan = _plan(tmp_path, llama_build, sweep={"method": ["draft"], "draft_max": [4]})
    with pytest.raises(ConfigError, match="at most 1"):
        matrix(plan, cfg, 2)
    with pytest.raises(ConfigError, match="at most 1"):
        cut(plan, cfg, Shard(2, 2))

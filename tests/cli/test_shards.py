"""Shards end to end on the real build: the quickstart cut into 3 shards, run as 3 runs, merged;
the merged report has the unsharded run's cells with the same sample counts. And the refusals."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fixtures.build import assert_one_line_error, cli
from tests.fixtures.replay import TIERS, Take, runs_by
from tests.helpers.realruns import threads

QUICK = "configs/quickstart.yaml"
CHEAP = ["--set", "generation.n_predict=16", "--set", "repetitions=1", "--set", "warmup=0",
         "--set", "prompts.ids=[math-03]", "--set", "sweep.method=[draft]",
         "--set", "sweep.draft_max=[2,4,8]", "--set", f"generation.threads={threads()}",
         "--set", "sentinel=false"]  # fmt: skip
AXES = ("pair", "method", "draft_max", "draft_min", "p_min", "ngl", "ngld", "category")


def _rows(run: Path) -> dict[tuple, dict]:
    out = cli("report", str(run), "--format", "json", "--out", str(run / "rep"))
    assert out.returncode == 0, out.stderr
    return {tuple(r[k] for k in AXES): r for r in json.loads(out.stdout)}


@pytest.fixture(scope="module", params=TIERS)
def runs(request, tmp_path_factory):
    """The plan (in a results folder of this test's own: no history yet, so dealt from sizes),
    the whole run, and each shard run with its matrix entry's cells, as sweep.yml does: replayed
    (a longer draft decodes slower: draft_max 8 is the slowest cell), and real in the integration
    tier."""
    with runs_by(request, tmp_path_factory, lambda inv, n: Take(slowdown=1 + (inv.draft_max or 0) / 10)):
        yield _runs(tmp_path_factory)


def _runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shards")
    env = {"SPECBENCH_RESULTS": str(tmp / "results")}
    plan = cli("plan", QUICK, *CHEAP, "--shards", "3", "--json", env=env)
    assert plan.returncode == 0, plan.stderr
    whole = cli("run", QUICK, *CHEAP, "--out", str(tmp / "whole"), "--quiet", env=env)
    assert whole.returncode == 0, whole.stderr
    include = json.loads(plan.stdout)["include"]
    for entry in include:
        i = entry["shard"].split("/")[0]
        # (their history goes elsewhere: the plan's estimates below are the whole run's)
        cells = {"SPECBENCH_SHARD_CELLS": json.dumps(entry["cells"]), "SPECBENCH_RESULTS": str(tmp / "r2")}
        done = cli(
            "run", QUICK, *CHEAP, "--shard", entry["shard"], "--out", str(tmp / f"s{i}"), "--quiet", env=cells
        )
        assert done.returncode == 0, done.stderr
        assert json.loads((tmp / f"s{i}" / "manifest.json").read_text())["shard_cells"] == entry["cells"]
    return tmp, include


def test_plan_estimates_from_this_machines_history(runs):
    """After the whole run, the plan knows each cell's t/s here: the slowest speculative cell
    measured is the one estimated longest (the shards share a baseline and draft-alone run)."""
    tmp, include = runs
    env = {"SPECBENCH_RESULTS": str(tmp / "results")}
    table = cli("plan", QUICK, *CHEAP, "--shards", "3", env=env)
    assert table.returncode == 0, table.stderr
    # the baseline and speculative runs are in history (draft-alone runs are not)
    found = re.search(r"estimated times: (\d+) of (\d+) runs from this machine's history", table.stdout)
    assert found and 0 < int(found.group(1)) < int(found.group(2)), table.stdout
    assert all(e["est_s"] == include[0]["est_s"] for e in include)  # before the run: sizes only
    tps = {row["draft_max"]: row["spec_tps"] for row in _rows(tmp / "whole").values()}
    by_est = json.loads(cli("plan", QUICK, *CHEAP, "--shards", "3", "--json", env=env).stdout)["include"]
    slowest = max(by_est, key=lambda e: e["est_s"])["cells"][0]
    assert f"draft_max={min(tps, key=tps.get)} " in slowest, (tps, by_est)


def test_shard_cells_must_be_the_plans(runs):
    tmp, include = runs
    one = ["run", QUICK, *CHEAP, "--dry-run"]
    unknown = cli(*one, "--shard", "1/3", "--shard-cells", '["smol nosuch"]')
    assert_one_line_error(unknown, "not in this config")
    assert_one_line_error(cli(*one, "--shard", "1/3", "--shard-cells", "smol"), "JSON list")
    assert_one_line_error(cli(*one, "--shard-cells", json.dumps(include[0]["cells"])), "goes with --shard")
    ok = cli(*one, "--shard", "1/3", "--shard-cells", json.dumps(include[2]["cells"]))
    assert ok.returncode == 0 and include[2]["cells"][0] in ok.stdout, ok.stderr


def test_plan_is_a_matrix_of_whole_cells(runs):
    _, include = runs
    assert [e["shard"] for e in include] == ["1/3", "2/3", "3/3"]
    assert sorted(c for e in include for c in e["cells"]) == sorted({c for e in include for c in e["cells"]})
    assert all(len(e["cells"]) == 1 and e["est_s"] > 0 for e in include)
    est = [e["est_s"] for e in include]
    assert max(est) <= 1.25 * min(est)


def test_merged_report_has_the_unsharded_cells_and_counts(runs):
    tmp, _ = runs
    merged = cli("merge", str(tmp / "s1"), str(tmp / "s2"), str(tmp / "s3"), "--out", str(tmp / "merged"))
    assert merged.returncode == 0, merged.stderr
    whole, parts = _rows(tmp / "whole"), _rows(tmp / "merged")
    assert set(whole) == set(parts) and len(whole) == 3
    for key, row in whole.items():
        assert (parts[key]["n"], parts[key]["baseline_n"]) == (row["n"], row["baseline_n"])
        assert parts[key]["machine"] and parts[key]["shard"]  # which machine measured it
    table = cli("report", str(tmp / "merged"), "--out", str(tmp / "merged" / "rep2"))
    assert "machine" in table.stdout
    compare = cli("compare", str(tmp / "whole"), str(tmp / "merged"))
    assert "no cell" not in compare.stdout + compare.stderr


def test_merge_refusals_keep_everything(runs, tmp_path):
    tmp, _ = runs
    s1, s2, s3 = (str(tmp / f"s{i}") for i in (1, 2, 3))
    assert_one_line_error(cli("merge", s1, s1, "--out", str(tmp_path / "a")), "twice")
    assert_one_line_error(cli("merge", s1, str(tmp / "whole"), "--out", str(tmp_path / "b")), "not a shard")
    missing = cli("merge", s1, s2, "--out", str(tmp_path / "c"))
    assert missing.returncode != 0 and "not complete" in missing.stderr
    assert_one_line_error(cli("merge", s1, s2, s3, "--out", str(tmp / "whole")), "already holds a run")
    assert_one_line_error(cli("run", QUICK, *CHEAP, "--shard", "4/3", "--dry-run"), "between 1 and 3")
    assert_one_line_error(cli("run", QUICK, *CHEAP, "--shard", "a/b", "--dry-run"), "i/N")


def test_a_shard_of_another_config_is_refused(runs, tmp_path):
    tmp, _ = runs
    other = cli("run", QUICK, *CHEAP, "--set", "generation.seed=7", "--shard", "3/3", "--out",
                str(tmp_path / "other"), "--quiet")  # fmt: skip
    assert other.returncode == 0, other.stderr
    out = cli(
        "merge", str(tmp / "s1"), str(tmp / "s2"), str(tmp_path / "other"), "--out", str(tmp_path / "m")
    )
    assert_one_line_error(out, "another config")
    assert not (tmp_path / "m" / "samples.jsonl").exists()


def test_slurm_variables_choose_the_shard(runs):
    dry = cli(
        "run", QUICK, *CHEAP, "--dry-run", env={"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "3"}
    )
    assert dry.returncode == 0, dry.stderr
    assert "shard 2/3 (from SLURM_ARRAY_TASK_ID" in dry.stderr
    assert "shard 2/3: 1 of the plan's 3 cells" in dry.stdout


def test_merge_says_what_it_dropped_from_a_shard(runs, tmp_path):
    import shutil

    tmp, _ = runs
    shards = [Path(shutil.copytree(tmp / f"s{i}", tmp_path / f"s{i}")) for i in (1, 2, 3)]
    samples = shards[1] / "samples.jsonl"
    samples.write_text(samples.read_text() + samples.read_text().splitlines()[0] + "\n")
    merged = cli("merge", *map(str, shards), "--out", str(tmp_path / "merged"))
    assert merged.returncode == 0, merged.stderr
    assert "s2/samples.jsonl: 1 duplicate sample was dropped" in " ".join(merged.stderr.split())


def test_plan_takes_quiet_as_run_does(llama_build, tmp_path):
    """A CI script passes the same flags to every command: `plan --quiet` is the table (or the
    matrix) without plan's notes, and `--quiet --json` is exactly the matrix `--json` prints."""
    env = {"SPECBENCH_RESULTS": str(tmp_path)}
    loud = cli("plan", QUICK, *CHEAP, "--shards", "2", env=env)
    quiet = cli("plan", QUICK, *CHEAP, "--shards", "2", "--quiet", env=env)
    assert loud.returncode == 0 and quiet.returncode == 0, loud.stderr + quiet.stderr
    assert "estimated times" in loud.stdout and "run each with" in loud.stdout
    assert "estimated times" not in quiet.stdout and "run each with" not in quiet.stdout
    assert "1/2" in quiet.stdout and "2/2" in quiet.stdout  # the table itself stays
    matrix = cli("plan", QUICK, *CHEAP, "--shards", "2", "--json", env=env)
    both = cli("plan", QUICK, *CHEAP, "--shards", "2", "--quiet", "--json", env=env)
    assert both.returncode == 0, both.stderr
    assert json.loads(both.stdout) == json.loads(matrix.stdout) and both.stderr == ""

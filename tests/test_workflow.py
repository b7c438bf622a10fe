"""The example GitHub workflow: each machine's run arguments must be ones `specbench run` accepts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from tests.fixtures.build import cli

WORKFLOW = Path(__file__).parent.parent / ".github" / "workflows" / "specbench.yml"
MATRIX = yaml.safe_load(WORKFLOW.read_text())["jobs"]["bench"]["strategy"]["matrix"]["include"]


def test_workflow_runs_build_run_compare_and_uploads_results():
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["bench"]["steps"]
    commands = " ".join(step.get("run", "") for step in steps)
    for needed in ("make setup", "specbench build", "specbench run configs/ci.yaml", "specbench compare"):
        assert needed in commands
    upload = next(step for step in steps if "upload-artifact" in step.get("uses", ""))
    assert upload["if"] == "always()" and upload["with"]["path"] == "results/"


def test_pull_requests_run_ab_on_the_pinned_tree_at_base_and_head():
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    assert jobs["ab"]["if"] == "github.event_name == 'pull_request'"
    assert jobs["bench"]["if"] == "github.event_name != 'pull_request'"
    commands = " ".join(step.get("run", "") for step in jobs["ab"]["steps"])
    assert "specbench ab configs/ci.yaml" in commands
    assert "--base third_party/llama.cpp@${{ steps.pins.outputs.base }}" in commands
    assert "--head third_party/llama.cpp@${{ steps.pins.outputs.head }}" in commands
    assert "pull_request.base.sha }}:third_party/llama.cpp" in commands
    ab_args = {m["name"]: m["run_args"] for m in jobs["ab"]["strategy"]["matrix"]["include"]}
    assert ab_args == {m["name"]: m["run_args"] for m in MATRIX}  # the same machines, the same arguments


@pytest.mark.parametrize("machine", MATRIX, ids=lambda m: m["name"])
def test_each_machines_run_arguments_dry_run(tmp_path, llama_build, machine):
    args = shlex.split(machine["run_args"])
    result = cli(
        "run", str(WORKFLOW.parents[2] / "configs" / "ci.yaml"), "--dry-run", *args,
        env={"SPECBENCH_RESULTS": str(tmp_path / "r")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"({machine['backend']})" in result.stdout  # the build it would use has the machine's backend
    ngld = llama_build.binary("speculative_simple").flags.ngld
    assert "-ngl 99" in result.stdout and f"{ngld} 99" in result.stdout


SWEEP = WORKFLOW.parent / "sweep.yml"


def test_sweep_plans_shards_runs_them_and_merges():
    jobs = yaml.safe_load(SWEEP.read_text())["jobs"]
    plan = " ".join(s.get("run", "") for s in jobs["plan"]["steps"])
    assert "specbench plan" in plan and "--shards" in plan and "--json" in plan
    assert jobs["shard"]["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    shard = " ".join(s.get("run", "") for s in jobs["shard"]["steps"])
    assert '--shard "${{ matrix.shard }}"' in shard
    upload = next(s for s in jobs["shard"]["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["name"].startswith("specbench-shard-")
    download = next(s for s in jobs["merge"]["steps"] if "download-artifact" in s.get("uses", ""))
    assert download["with"] == {"pattern": "specbench-shard-*", "path": "shards/", "merge-multiple": True}
    merge = " ".join(s.get("run", "") for s in jobs["merge"]["steps"])
    assert "specbench merge shards/shard-*" in merge and "GITHUB_STEP_SUMMARY" in merge


CI = WORKFLOW.parent / "ci.yml"


def _ci() -> dict:
    wf = yaml.safe_load(CI.read_text())
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads the key `on` as true
    return wf


def _runs(job: dict) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_ci_lints_and_tests_every_push_and_pull_request_on_linux_and_macos():
    wf = _ci()
    assert {"push", "pull_request"} <= set(wf["on"])
    test = wf["jobs"]["test"]
    assert "if" not in test  # every event
    assert test["strategy"]["matrix"]["os"] == ["ubuntu-latest", "macos-latest"]
    assert test["strategy"]["fail-fast"] is False  # a Linux failure does not hide the macOS result
    assert _runs(test)[-2:] == ["make lint", "make test"]


def test_ci_runs_the_integration_tier_nightly_and_by_hand():
    wf = _ci()
    assert wf["on"]["schedule"][0]["cron"] and "workflow_dispatch" in wf["on"]
    job = wf["jobs"]["integration"]
    assert job["if"] == "github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'"
    assert _runs(job)[-1] == "make test-integration"
    assert "make test-integration" not in _runs(wf["jobs"]["test"])  # not on every push


def test_ci_pins_each_action_to_a_commit_named_by_its_release():
    uses = [line.split("uses:", 1)[1].strip() for line in CI.read_text().splitlines() if "uses:" in line]
    assert {u.split("@")[0] for u in uses} == {"actions/checkout", "actions/setup-python", "actions/cache"}
    for u in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+(\.\d+)*", u), u


def test_ci_reads_only_cancels_superseded_pull_request_runs_and_caches_specbench_home():
    wf = _ci()
    assert wf["permissions"] == {"contents": "read"}
    assert wf["concurrency"]["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"
    for job in wf["jobs"].values():
        steps = job["steps"]
        home = next(s["run"] for s in steps if "SPECBENCH_HOME=" in s.get("run", ""))
        assert home == 'echo "SPECBENCH_HOME=$HOME/.cache/specbench" >> "$GITHUB_ENV"'
        cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
        assert all(p.startswith("~/.cache/specbench/") for p in cache["with"]["path"].split())
        assert cache["with"]["key"].startswith("specbench-${{ runner.os }}-${{ runner.arch }}-${{ hashFiles(")
        assert steps.index(cache) < next(i for i, s in enumerate(steps) if s.get("run") == "make setup")

"""EAGLE-3 and MTP through the real pinned llama.cpp, with GGUFs written at test time (no download).

`smol_eagle3` is a random-weight EAGLE-3 head for SmolLM2; `tiny_mtp` a random-weight glm4moe
target with one MTP layer (tests/fixtures/generated.py). Their acceptance means nothing: these
tests check the plumbing (the files load, drafting happens, the logs parse).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from specbench.base.childenv import child_env
from specbench.builder.workaround import workaround_argv
from specbench.models.meta import read_metadata
from specbench.parse.process import parse_text
from specbench.results.samplelog import load_samples
from tests.fixtures.build import cli
from tests.helpers.realruns import threads

pytestmark = pytest.mark.slow
PROMPT = "Write a Python function that returns the sum of a list of numbers."


def test_generated_files_are_what_the_methods_need(smol_eagle3, tiny_mtp):
    head = read_metadata(smol_eagle3)
    assert head.architecture == "eagle3" and head.vocab_size == 49152
    assert smol_eagle3.stat().st_size < 16_000_000
    assert read_metadata(tiny_mtp).architecture == "glm4moe"


def _speculative_simple(llama_build, *args: str) -> subprocess.CompletedProcess[str]:
    binary = llama_build.binary("speculative_simple").path
    cmd = [binary, *workaround_argv(llama_build, "speculative_simple"), *args]  # the workaround, as planned
    cmd += ["--spec-draft-n-max", "4", "-p", PROMPT, "-n", "16", "-t", str(threads()), "--temp", "0"]
    return subprocess.run(
        [*cmd, "-c", "512"],
        capture_output=True,
        text=True,
        timeout=300,
        env=child_env(),
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("method", ["draft-eagle3", "draft-mtp"])
def test_pinned_build_drafts_with_the_generated_files(method, llama_build, smol_f32, smol_eagle3, tiny_mtp):
    """By hand, no specbench plan: llama-speculative-simple loads the file and drafts with it."""
    if method == "draft-eagle3":
        args = ["-m", str(smol_f32.path), "-md", str(smol_eagle3), "--spec-type", method]
    else:
        args = ["-m", str(tiny_mtp), "--spec-type", method]
    result = _speculative_simple(llama_build, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    parsed = parse_text(result.stderr + result.stdout)
    assert parsed.kind == "speculative" and parsed.n_drafted and parsed.n_drafted > 0
    assert parsed.decoded and parsed.decoded.tokens and parsed.decoded.tokens >= 16
    if method == "draft-mtp":  # its MTP layer repeats the target's last prediction (see the fixture)
        assert parsed.n_accept and parsed.n_accept > 0


# --- through specbench: `specbench run` with both runners, then `specbench report` ---------------


def methods_config(tmp: Path, target, draft, eagle3: Path, mtp: Path | None = None, **extra) -> Path:
    """SmolLM2 F32 with its Q4_1 draft (method draft) and with the generated EAGLE-3 head, and
    (optionally) the MTP target: 1 prompt, 16 tokens, 1 repetition, no warmup."""
    models = {
        "f32": {"path": str(target.path)},
        "q4": {"path": str(draft.path)},
        "head": {"path": str(eagle3)},
    }
    # sweep.method [draft, draft-eagle3]: each pair runs the entries its draft fits (q4: draft, the
    # head: draft-eagle3); the MTP target is pinned to draft-mtp (it has no draft model)
    pairs = {
        "smol": {"target": "f32", "draft": "q4"},
        "smol-eagle3": {"target": "f32", "draft": "head"},
    }
    if mtp is not None:
        models["mtp"] = {"path": str(mtp)}
        pairs["mtp"] = {"target": "mtp", "method": "draft-mtp"}
    line = {"id": "sum", "category": "code", "messages": [{"role": "user", "content": PROMPT}]}
    (tmp / "prompts.jsonl").write_text(json.dumps(line) + "\n")
    data = dict(
        name="methods",
        models=models,
        pairs=pairs,
        prompts={"file": str(tmp / "prompts.jsonl")},
        sweep={"method": ["draft", "draft-eagle3"], "draft_max": [4]},
        generation={"n_predict": 16, "threads": threads()},
        repetitions=1,
        warmup=0,
        timeout_s=300,
        sentinel=False,  # not what this test reads (tests/helpers/realruns.write_config)
    )
    data.update(extra)
    path = tmp / "methods.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("runner", ["process", "server"])
def test_run_and_report_every_generated_method(
    runner, tmp_path, llama_build, smol_f32, smol_q4, smol_eagle3, tiny_mtp
):
    config = methods_config(tmp_path, smol_f32, smol_q4, smol_eagle3, tiny_mtp)
    run_dir = tmp_path / "results" / "run1"
    env = {"SPECBENCH_RESULTS": str(tmp_path / "results")}
    result = cli("run", str(config), "--out", str(run_dir), "--set", f"runner={runner}", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    samples = load_samples(run_dir)
    spec = {s.method: s for s in samples if s.role == "speculative"}
    assert sorted(spec) == ["draft", "draft-eagle3", "draft-mtp"]  # one sample each: nothing crossed
    assert [spec[m].pair for m in ("draft", "draft-eagle3", "draft-mtp")] == ["smol", "smol-eagle3", "mtp"]
    for method, s in spec.items():
        assert s.runner == runner and s.status == "ok", (method, s.invalid_reason)
        assert s.metrics is not None and s.metrics.n_drafted and s.metrics.n_drafted > 0, method
        assert s.tps and s.tps > 0
        assert s.outputs_match is True, (method, s.first_diff)  # temperature 0: the target's own text
        expected = "draft-simple" if method == "draft" else method
        assert expected in s.cmd
    # only the draft-simple draft runs alone (a head needs the target's features; MTP has no model)
    assert [s.model for s in samples if s.role == "draft"] == ["q4"]
    assert spec["draft-mtp"].metrics.n_accept > 0  # the generated MTP layer repeats the last prediction
    report = cli("report", str(run_dir), "--format", "json")
    assert report.returncode == 0, report.stderr
    rows = {r["method"]: r for r in json.loads(report.stdout)}
    assert sorted(rows) == ["draft", "draft-eagle3", "draft-mtp"]
    assert [rows[m]["pair"] for m in ("draft", "draft-eagle3", "draft-mtp")] == ["smol", "smol-eagle3", "mtp"]
    for method, row in rows.items():
        assert row["speedup"] > 0, (method, row)

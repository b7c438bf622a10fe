"""The table's newer options as keys and axes in one real run (issue 61 item 1): ngram-mod's
--spec-ngram-mod-n-min/-n-max/-n-match and the draft's --spec-draft-threads, each one entry of
specbench.base.llamaopts, reach the pinned llama.cpp's command lines, the samples and the report."""

from __future__ import annotations

import json

import pytest

from specbench.results.samplelog import load_samples
from tests.fixtures.build import cli
from tests.helpers.realruns import threads, write_config

pytestmark = pytest.mark.slow


def test_ngram_mod_sizes_and_draft_threads_are_axes_of_a_real_run(
    tmp_path, llama_build, smol_target, smol_q4
):
    block = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
    prompts = tmp_path / "prompts.jsonl"  # a repeated block: ngram-mod finds its lookups
    prompts.write_text(json.dumps({"id": "code", "category": "code", "text": (block * 4).rstrip()}) + "\n")
    config = write_config(
        tmp_path / "axes.yaml",
        name="axes",
        models={"q8": {"path": str(smol_target.path)}, "q4": {"path": str(smol_q4.path)}},
        pairs={"mod": {"target": "q4", "method": "ngram-mod"}, "smol": {"target": "q8", "draft": "q4"}},
        prompts={"file": str(prompts)},
        ngram_mod_n_min=4,
        ngram_mod_n_match=8,
        sweep={"method": ["draft"], "draft_max": [4], "ngram_mod_n_max": [16, 32], "threads_draft": [1, 2]},
        generation={"n_predict": 16, "threads": threads()},
        repetitions=1,
        warmup=0,
        timeout_s=300,
    )
    run_dir = tmp_path / "results" / "run1"
    result = cli(
        "run", str(config), "--out", str(run_dir), env={"SPECBENCH_RESULTS": str(tmp_path / "results")}
    )
    assert result.returncode == 0, result.stderr[-3000:]
    spec = [s for s in load_samples(run_dir) if s.role == "speculative"]
    assert all(s.exit_code == 0 and s.status in ("ok", "invalid") for s in spec), [
        s.invalid_reason for s in spec
    ]
    mod = {s.ngram_mod_n_max: s for s in spec if s.method == "ngram-mod"}
    draft = {s.threads_draft: s for s in spec if s.method == "draft"}
    assert sorted(mod) == [16, 32] and sorted(draft) == [1, 2]
    for n_max, s in mod.items():  # each value a cell, on the command line it ran with
        cmd = s.cmd
        assert cmd[cmd.index("--spec-ngram-mod-n-max") + 1] == str(n_max)
        assert cmd[cmd.index("--spec-ngram-mod-n-min") + 1] == "4"
        assert cmd[cmd.index("--spec-ngram-mod-n-match") + 1] == "8"
        assert s.threads_draft is None and "--spec-draft-threads" not in cmd
    for n, s in draft.items():
        assert s.cmd[s.cmd.index("--spec-draft-threads") + 1] == str(n) and s.ngram_mod_n_max is None
        assert s.status == "ok", s.invalid_reason
    report = cli("report", str(run_dir), "--format", "json")
    assert report.returncode == 0, report.stderr
    rows = json.loads(report.stdout)
    assert {(r["method"], r.get("ngram_mod_n_max"), r.get("threads_draft")) for r in rows} == {
        ("ngram-mod", 16, None), ("ngram-mod", 32, None), ("draft", None, 1), ("draft", None, 2)
    }  # fmt: skip

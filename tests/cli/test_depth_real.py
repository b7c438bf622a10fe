"""Speculation at depth on the real build (issue 62): the quickstart pair (SmolLM2-135M, F32 target,
Q4_1 draft) at depth [0, 256] with both runners. Each sample's prompt holds exactly 256 more tokens
at depth 256 than at 0 (counted by llama.cpp itself as it prefilled them), its prefill is recorded
outside the timed span, and the report has the depth table and its break-even line. The rules
themselves are proven without llama.cpp in tests/plan/test_depth.py, tests/execute/test_judge.py
and tests/analysis/test_depth.py."""

from __future__ import annotations

import pytest

from specbench.results.samplelog import load_samples
from tests.fixtures.build import cli_process as cli
from tests.helpers.realruns import short_prompt, threads, write_config

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.mark.parametrize("runner", ["process", "server"])
def test_the_quickstart_pair_at_depth_0_and_256(tmp_path, llama_build, smol_f32, smol_q4, runner):
    config = write_config(
        tmp_path / "depth.yaml", name="depth", runner=runner,
        models={"f32": {"path": str(smol_f32.path)}, "q4": {"path": str(smol_q4.path)}},
        pairs={"smol": {"target": "f32", "draft": "q4"}},
        prompts={"file": str(short_prompt(tmp_path))},
        sweep={"draft_max": [8], "depth": [0, 256]},
        generation={"n_predict": 4, "threads": threads(), "ctx_size": 1024},
        repetitions=2, warmup=0, timeout_s=600,
    )  # fmt: skip
    run_dir = tmp_path / "run"
    # 12 invocations; on 2 busy shared cores one took a minute (0.5 t/s): the run's own limit is generous
    done = cli("run", str(config), "--out", str(run_dir), env={"COLUMNS": "200"}, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    samples = [s for s in load_samples(run_dir) if s.status == "ok"]
    by = {(s.role, s.depth, s.repetition): s for s in samples}
    for role in ("baseline", "speculative"):
        for rep in (0, 1):
            shallow, deep = by[(role, 0, rep)], by[(role, 256, rep)]
            assert deep.prompt_tokens - shallow.prompt_tokens == 256, (role, rep)
            assert deep.prefill_s > 0 and shallow.prefill_s > 0
    if runner == "process":  # the baseline and the speculative side were given the same text
        for rep in (0, 1):
            base, spec = by[("baseline", 256, rep)].cmd, by[("speculative", 256, rep)].cmd
            assert base[base.index("-p") + 1] == spec[spec.index("-p") + 1]
            assert "We the People" in base[base.index("-p") + 1]
    out = tmp_path / "report"
    report = cli("report", str(run_dir), "--out", str(out), env={"COLUMNS": "200"})
    assert report.returncode == 0, report.stderr[-3000:]
    text = (out / "report.md").read_text()
    assert "### Speculation at depth" in text and "| 256 |" in text
    assert any(w in text for w in ("break-even between", "pays at every depth", "never pays at the depths"))
    assert (out / "speedup_vs_depth.png").is_file()


def test_a_depth_beyond_the_context_is_refused_in_one_line_before_running(
    tmp_path, llama_build, smol_f32, smol_q4
):
    config = write_config(
        tmp_path / "deep.yaml", name="deep",
        models={"f32": {"path": str(smol_f32.path)}, "q4": {"path": str(smol_q4.path)}},
        pairs={"smol": {"target": "f32", "draft": "q4"}},
        prompts={"file": str(short_prompt(tmp_path))},
        sweep={"draft_max": [8], "depth": [0, 8192]},
        generation={"n_predict": 8, "threads": threads(), "ctx_size": 0},
    )  # fmt: skip
    refused = cli("run", str(config), "--out", str(tmp_path / "run"))
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "beyond model f32's context (8192 tokens" in lines[0], refused.stderr
    assert not (tmp_path / "run" / "samples.jsonl").exists()

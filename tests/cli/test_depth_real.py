"""Speculation at depth on the real build (issue 62's done-when): the quickstart pair (SmolLM2-135M,
F32 target, Q4_1 draft) at depth [0, 1024, 4096] with the process and the server runner, one short
prompt, two repetitions, 16 tokens. Each runner's report has speedup and acceptance per depth with
their intervals, the plot and a break-even line, and the two runners agree within their intervals at
each depth. Depth 4096 is past llama.cpp's default batch (2048): llama-speculative-simple takes the
whole prompt in one batch, so its runs (and their baselines) get a -b that holds it; on an H200 every
speculative sample there failed before. The rules themselves are proven without llama.cpp in
tests/plan/test_depth.py, tests/plan/test_fit.py, tests/execute/test_outputs.py and
tests/analysis/test_depth.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specbench.results.samplelog import load_samples
from tests.fixtures.build import cli
from tests.helpers.realruns import short_prompt, threads, write_config

pytestmark = [pytest.mark.slow, pytest.mark.integration]

DEPTHS = [0, 1024, 4096]
RUNNERS = ("process", "server")


@pytest.fixture(scope="module")
def depth_runs(tmp_path_factory, llama_build, smol_f32, smol_q4) -> dict[str, tuple[Path, Path]]:
    """Each runner's run folder and report folder."""
    out: dict[str, tuple[Path, Path]] = {}
    for runner in RUNNERS:
        tmp = tmp_path_factory.mktemp(f"depth-{runner}")
        config = write_config(
            tmp / "depth.yaml", name=f"depth-{runner}", runner=runner,
            models={"f32": {"path": str(smol_f32.path)}, "q4": {"path": str(smol_q4.path)}},
            pairs={"smol": {"target": "f32", "draft": "q4"}},
            prompts={"file": str(short_prompt(tmp))},
            sweep={"draft_max": [8], "depth": DEPTHS},
            generation={"n_predict": 16, "threads": threads(), "ctx_size": 5120},
            repetitions=2, warmup=0, timeout_s=900,
        )  # fmt: skip
        run_dir, report_dir = tmp / "run", tmp / "report"
        done = cli("run", str(config), "--out", str(run_dir), env={"COLUMNS": "200"})
        assert done.returncode == 0, done.stderr[-3000:]
        report = cli("report", str(run_dir), "--out", str(report_dir), env={"COLUMNS": "200"})
        assert report.returncode == 0, report.stderr[-3000:]
        out[runner] = (run_dir, report_dir)
    return out


def _depth_rows(report_dir: Path) -> dict[int, dict]:
    rows = json.loads((report_dir / "report.json").read_text())
    return {r["depth"]: r for r in rows if r["category"] == "all" and r["pair"] == "smol"}


@pytest.mark.parametrize("runner", RUNNERS)
def test_every_sample_at_every_depth_ran_after_exactly_its_context(depth_runs, runner):
    run_dir, _ = depth_runs[runner]
    samples = load_samples(run_dir)
    assert all(s.status == "ok" for s in samples), [(s.depth, s.role, s.invalid_reason) for s in samples]
    by = {(s.role, s.depth, s.repetition): s for s in samples}
    for role in ("baseline", "speculative"):
        for rep in (0, 1):
            shallow = by[(role, 0, rep)]
            for depth in DEPTHS[1:]:
                deep = by[(role, depth, rep)]  # counted by llama.cpp itself as it prefilled them
                assert deep.prompt_tokens - shallow.prompt_tokens == depth, (role, depth, rep)
                assert deep.prefill_s > 0
    if runner == "process":  # both sides got the same text, and at 4096 the same -b that holds it
        for rep in (0, 1):
            base, spec = by[("baseline", 4096, rep)].cmd, by[("speculative", 4096, rep)].cmd
            assert base[base.index("-p") + 1] == spec[spec.index("-p") + 1]
            assert "We the People" in base[base.index("-p") + 1]
            batch = int(spec[spec.index("-b") + 1])
            assert batch > 4096 and base[base.index("-b") + 1] == str(batch)
            assert by[("speculative", 4096, rep)].prompt_tokens <= batch
            assert "-b" not in by[("speculative", 1024, rep)].cmd  # the default batch holds it


@pytest.mark.parametrize("runner", RUNNERS)
def test_the_report_has_speedup_and_acceptance_per_depth_with_intervals_the_plot_and_a_break_even(
    depth_runs, runner
):
    _, report_dir = depth_runs[runner]
    rows = _depth_rows(report_dir)
    assert sorted(rows) == DEPTHS
    for depth, r in rows.items():
        assert r["speedup_ci_low"] <= r["speedup"] <= r["speedup_ci_high"], depth
        assert r["acceptance_ci_low"] <= r["acceptance"] <= r["acceptance_ci_high"], depth
    text = (report_dir / "report.md").read_text()
    assert "### Speculation at depth" in text
    assert all(f"| {d} |" in text for d in DEPTHS)
    assert any(w in text for w in ("break-even between", "pays at every depth", "never pays at the depths"))
    assert (report_dir / "speedup_vs_depth.png").is_file()


def test_the_two_runners_agree_within_their_intervals_at_each_depth(depth_runs):
    process, server = (_depth_rows(depth_runs[r][1]) for r in RUNNERS)
    for depth in DEPTHS:
        p, s = process[depth], server[depth]
        for metric in ("speedup", "acceptance"):
            lo, hi = f"{metric}_ci_low", f"{metric}_ci_high"
            assert p[lo] <= s[hi] and s[lo] <= p[hi], (depth, metric, p[lo], p[hi], s[lo], s[hi])


def test_a_depth_beyond_the_context_is_refused_in_one_line_before_running(
    tmp_path, llama_build, smol_f32, smol_q4
):
    config = write_config(
        tmp_path / "deep.yaml",
        name="deep",
        models={"f32": {"path": str(smol_f32.path)}, "q4": {"path": str(smol_q4.path)}},
        pairs={"smol": {"target": "f32", "draft": "q4"}},
        prompts={"file": str(short_prompt(tmp_path))},
        sweep={"draft_max": [8], "depth": [0, 8192]},
        generation={"n_predict": 8, "threads": threads(), "ctx_size": 0},
    )
    refused = cli("run", str(config), "--out", str(tmp_path / "run"))
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "beyond model f32's context (8192 tokens" in lines[0], refused.stderr
    assert not (tmp_path / "run" / "samples.jsonl").exists()

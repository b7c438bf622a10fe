"""Issue 42 on real llama.cpp: independent samples, equal work, one figure, strict JSON.

* Independence: the issue's command (quickstart pair, ngram-mod, server runner, repetitions of
  chat-01 and math-03 at 64 tokens, warmup 1; here the target at Q8_0, chat-01, 2 repetitions) once
  gave 3.74x from a pool llama-server kept between requests (the first repetition drafted 0, the
  next 53). Each repetition must now draft and accept what the process runner's does.
* Equal work: ngram-simple with a small lookup on a prompt that repeats a list runs past
  n_predict (asked 64, decoded 79 here); both sides of its speedup are timed over 64 tokens.
* One figure and strict JSON on the run folders of both runners and the site published from them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from specbench.results.samplelog import load_samples
from tests.fixtures.build import cli, cli_process
from tests.helpers.figures import check_one_figure
from tests.helpers.realruns import threads, write_config

# integration tier (issue 60); each rule, replayed or on recordings: docs/development.md's table
pytestmark = [pytest.mark.slow, pytest.mark.integration]

FRUITS = (
    "Write the list again exactly: apple, banana, cherry, date, elderberry, fig, grape, apple, banana, "
    "cherry, date, elderberry, fig, grape, apple, banana, cherry, date, elderberry, fig, grape. List:"
)


def _config(tmp: Path, target, q4, **extra) -> Path:
    data = dict(
        name="issue42",
        models={"smol_q8": {"path": str(target.path)}, "smol_q4": {"path": str(q4.path)}},
        pairs={"smol": {"target": "smol_q8", "draft": "smol_q4"}},
        prompts={"suite": "builtin", "ids": ["chat-01"]},
        sweep={"method": ["ngram-mod"]},
        generation={"n_predict": 64, "threads": threads()},
        repetitions=2,
        warmup=1,
        timeout_s=300,
    )
    data.update(extra)
    return write_config(tmp / f"{data['name']}.yaml", **data)


def _run(tmp: Path, config: Path, name: str, *sets: str, engages: bool = True) -> Path:
    """A real run; ``engages=False``: no cell is expected to draft (ngram-mod on these prompts never
    does from a fresh pool), which the run says with exit 1 and 'no valid sample'."""
    out = tmp / "results" / name
    args = [a for s in sets for a in ("--set", s)]
    result = cli_process(
        "run", str(config), *args, "--out", str(out), env={"SPECBENCH_RESULTS": str(tmp / "results")}
    )
    if engages:
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    else:
        assert result.returncode == 1 and "no valid sample" in result.stderr, result.stderr[-2000:]
    assert (out / "samples.jsonl").is_file()
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory, llama_build, smol_target, smol_q4) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("issue42")
    config = _config(tmp, smol_target, smol_q4)
    prompts = tmp / "fruits.jsonl"
    prompts.write_text(json.dumps({"id": "fruits", "category": "extraction", "text": FRUITS}) + "\n")
    overshoot = _config(
        tmp, smol_target, smol_q4, name="overshoot", prompts={"file": str(prompts)},
        sweep={"method": ["ngram-simple"], "ngram_size_n": [3]}, repetitions=1, warmup=0,
    )  # fmt: skip
    return {
        "server": _run(tmp, config, "server", "runner=server", engages=False),
        "process": _run(tmp, config, "process", "runner=process", engages=False),
        "overshoot": _run(tmp, overshoot, "overshoot"),
        "overshoot-server": _run(tmp, overshoot, "overshoot-server", "runner=server"),
        "root": tmp / "results",
    }


def _counts(run: Path) -> dict[str, set[tuple]]:
    by_prompt: dict[str, set[tuple]] = defaultdict(set)
    for s in load_samples(run):
        if s.role == "speculative" and s.metrics is not None:
            by_prompt[s.prompt_id].add((s.metrics.n_drafted, s.metrics.n_accept))
    return by_prompt


def test_each_server_repetition_drafts_what_the_process_runner_drafts(runs):
    server, process = _counts(runs["server"]), _counts(runs["process"])
    assert set(server) == set(process) == {"chat-01"}
    for prompt in server:
        assert len(server[prompt]) == 1, f"{prompt}: repetitions differ {server[prompt]}"
        assert server[prompt] == process[prompt], (
            f"{prompt}: server {server[prompt]} process {process[prompt]}"
        )


def test_a_speculative_run_past_n_predict_is_timed_over_the_baselines_tokens(runs):
    samples = load_samples(runs["overshoot"])
    spec = [s for s in samples if s.role == "speculative" and s.status == "ok"]
    base = [s for s in samples if s.role == "baseline" and s.status == "ok"]
    assert spec and base
    assert all(s.metrics.n_predict > 64 for s in spec), [s.metrics.n_predict for s in spec]  # it went past
    assert {s.timed_tokens for s in spec} == {s.timed_tokens for s in base} == {64}
    for s in spec:  # the rate is over the first 64 tokens, not the decoded line's 79
        assert s.tps != pytest.approx(s.metrics.decoded.tps, rel=1e-6)
    server = load_samples(runs["overshoot-server"])  # llama-server stops at 64 itself
    assert {s.timed_tokens for s in server if s.status == "ok"} == {64}


def test_every_json_file_of_the_runs_and_the_site_is_strict(runs, tmp_path):
    for run in ("server", "process", "overshoot", "overshoot-server"):
        assert cli("report", str(runs[run])).returncode == 0
    site = tmp_path / "site"
    db = runs["root"] / "history.sqlite"
    result = cli("publish", "--db", str(db), "--out", str(site), "--runs", str(runs["root"]))
    assert result.returncode == 0, result.stderr[-2000:]
    checked = 0
    for folder in (runs["root"], site):
        for path in [*folder.rglob("*.json"), *folder.rglob("*.jsonl")]:
            for text in path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]:
                if text.strip():
                    json.loads(text, parse_constant=lambda c, p=path: pytest.fail(f"{c} in {p}"))
            checked += 1
    assert checked >= 6


@pytest.mark.parametrize("run", ["overshoot-server", "overshoot"])
def test_report_history_compare_and_site_show_one_speedup(runs, run, tmp_path):
    """The recorded-folder check (tests/analysis/test_one_figure.py) on this session's real runs."""
    assert check_one_figure(runs[run], tmp_path) >= 1

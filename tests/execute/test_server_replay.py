"""The server runner over replayed llama-servers (tests/fixtures/replay.py, ``ServerReplay``): the
real ``ServerExecutor``, requests, readiness check, runner loop and judge, with recorded server logs
and responses of the pinned build and the faults a rule needs, in milliseconds. The real server's
run of the quickstart pair stays in the real tier (tests/execute/test_server.py::server_run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.fixtures.replay import Take
from tests.helpers.cli import invoke
from tests.helpers.interleaved import check_interleaved

CI = Path(__file__).resolve().parents[2] / "configs" / "ci.yaml"
REPLAYED_RESPONSE = (
    Path(__file__).resolve().parents[1] / "data" / "runs" / "server-aba" / "raw"
    / "0004-speculative-smol_f32-smol_q4-n8-code-02-r0.response.json"
)  # fmt: skip
SERVER = ["--set", "runner=server", "--set", "sentinel=false", "--set", "repetitions=1",
          "--set", "generation.n_predict=32"]  # fmt: skip  # the recorded responses' 32 tokens


def run(tmp_path: Path, *args: str):
    return invoke("run", CI, "--out", tmp_path / "run", *SERVER, *args, cwd=tmp_path)


def _model(argv: list[str]) -> str:
    return argv[argv.index("-m") + 1]


def test_a_server_run_loads_each_setting_once_brackets_and_batches_its_parallel_requests(tmp_path, replay):
    r = run(tmp_path, "--set", "sweep.parallel=[1,2]")
    assert r.returncode == 0, r.stderr
    samples = load_samples(tmp_path / "run")
    assert {(s.runner, s.parallel) for s in samples} == {("server", 1), ("server", 2)}
    assert all(s.status == "ok" and s.valid for s in samples), [s.invalid_reason for s in samples]
    spec = [s for s in samples if s.role == "speculative"]
    assert len(spec) == 4 and all(s.outputs_match is True and s.acceptance > 0 for s in spec)
    pairs = [s for s in samples if s.parallel == 2 and s.role == "baseline"]
    assert len({s.batch for s in pairs}) == 1 and len({s.batch_wall_s for s in pairs}) == 1  # together
    settings = {tuple(s.cmd) for s in samples}
    assert len(settings) == 5  # baseline and draft cell at P=1 and P=2, the draft alone once
    after = [s for s in samples if s.role == "baseline-after"]
    assert sorted((s.parallel, s.prompt_id) for s in after) == sorted(
        (s.parallel, s.prompt_id) for s in samples if s.role == "baseline"
    )
    assert min(s.started_at for s in after) >= max(s.started_at for s in spec if s.parallel == 1)
    manifest = load_manifest(tmp_path / "run")
    # one load per setting, and the baseline's server again after the speculative one, at P=1 and 2
    assert manifest.runner == "server"
    assert manifest.model_loads == len(settings) + 2 == len(replay.server.starts)
    assert len(list((tmp_path / "run" / "raw").glob("*-server.stderr"))) == manifest.model_loads
    assert sorted(replay.server.stopped) == [95000 + n for n in range(manifest.model_loads)]  # none left
    for path in (tmp_path / "run").rglob("*.json*"):  # strict JSON: responses, samples, manifest
        for text in path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]:
            json.loads(text, parse_constant=lambda c, p=path: pytest.fail(f"{c} in {p}"))


def test_a_model_that_does_not_load_fails_its_samples_once(tmp_path, replay):
    """The target's servers exit as the pinned llama-server does on a model it cannot load
    (tests/data/load_errors): every target sample fails with the server's reason, the draft alone
    is measured, and each setting is tried once, not once per sample."""
    replay.server.start = lambda argv, n: "unknown-arch.server.stderr" if "F32" in _model(argv) else None
    r = run(tmp_path, "--set", "repetitions=2")
    samples = load_samples(tmp_path / "run")
    target = [s for s in samples if s.role != "draft"]
    assert target and all(s.status == "failed" and not s.valid for s in target), r.stderr
    why = "llama-server exited (exit code 1: the model did not load: unknown model architecture"
    assert all(s.invalid_reason.startswith(why) for s in target), target[0].invalid_reason
    alone = [s for s in samples if s.role == "draft"]
    assert len(alone) == 4 and all(s.status == "ok" for s in alone)
    assert load_manifest(tmp_path / "run").model_loads == len({tuple(s.cmd) for s in samples}) == 3


def test_a_dying_or_hung_server_fails_its_request_and_the_next_one_restarts(tmp_path, replay):
    """The baseline's server killed while it answers its 2nd request, then its 4th never answered:
    each fails with its reason, the server is stopped (a hung one too: not asked again), and the
    next request of the setting gets a fresh one."""
    takes = {1: Take(signal="SIGKILL"), 3: Take(timed_out=True)}
    replay.server.script = lambda argv, body, n: takes.get(n, Take())
    r = run(tmp_path, "--set", "warmup=0", "--set", "repetitions=3", "--set", "timeout_s=30")
    assert r.returncode == 0, r.stderr
    base = [s for s in load_samples(tmp_path / "run") if s.role == "baseline"]
    assert [s.status for s in base] == ["ok", "failed", "ok", "timeout", "ok", "ok"]
    assert base[1].invalid_reason.startswith("llama-server exited (killed by SIGKILL"), base[1].invalid_reason
    assert "no answer in 30 s" in base[3].invalid_reason
    spec = [n for n, a in enumerate(replay.server.starts) if "--spec-type" in a]
    assert spec[0] == 3  # the baseline's servers before it: the first, after the death, after the hang
    assert sorted(replay.server.stopped) == [95000 + n for n in range(len(replay.server.starts))]


def test_a_server_that_does_not_speculate_fails_its_samples(tmp_path, replay):
    replay.server.speculates = False  # /slots: the draft failed to initialise
    r = run(tmp_path)
    samples = load_samples(tmp_path / "run")
    spec = [s for s in samples if s.role == "speculative"]
    assert spec and all(s.status == "failed" for s in spec), r.stderr
    assert all("without speculation" in s.invalid_reason for s in spec)
    assert all(s.status == "ok" for s in samples if s.role != "speculative")


def test_a_server_that_drafts_only_for_cached_prompts_is_asked_again_keeping_the_prompt(tmp_path, replay):
    """llama.cpp's servers of late 2024 to late 2025 draft nothing for a request with cache_prompt:
    false (issue 59: the 2025 tree's every server sample was invalid). Seen on /slots after the
    first request, that request is measured again with cache_prompt: true, as are the server's
    next ones, and each sample records what it sent; no other server gets an extra request."""
    replay.server.drafts_only_cached = True
    r = run(tmp_path, "--set", "warmup=0", "--set", "repetitions=2")
    assert r.returncode == 0, r.stderr
    samples = load_samples(tmp_path / "run")
    spec = [s for s in samples if s.role == "speculative"]
    assert spec and all(s.status == "ok" and s.valid and s.timings.draft_n > 0 for s in spec)
    assert all(s.server_cache_prompt is True for s in spec)
    assert all(s.server_cache_prompt is False for s in samples if s.role != "speculative")
    sent = [body["cache_prompt"] for argv, body in replay.server.requests if "--spec-type" in argv]
    assert sent == [False] + [True] * len(spec)  # the first asked once more, keeping its prompt
    plain = [body for argv, body in replay.server.requests if "--spec-type" not in argv]
    assert len(plain) == len(samples) - len(spec) and not any(b["cache_prompt"] for b in plain)


def test_draft_counts_a_server_prints_only_in_its_log_are_read_from_it(tmp_path, replay):
    """ik_llama.cpp's llama-server drafts but leaves draft_n out of its responses (issue 59: every
    sample was 'speculation never engaged'); the log it writes during the request has the counts."""
    replay.server.counts_in_log_only = True
    r = run(tmp_path, "--set", "warmup=0")
    assert r.returncode == 0, r.stderr
    spec = [s for s in load_samples(tmp_path / "run") if s.role == "speculative"]
    recorded = json.loads((REPLAYED_RESPONSE).read_text())["timings"]
    assert spec and all(s.valid and s.timings.draft_n == recorded["draft_n"] for s in spec)
    assert all(s.timings.draft_n_accepted == recorded["draft_n_accepted"] for s in spec)
    assert all(s.timings.model_dump()["draft_counts_from"] == "server log" for s in spec)


def test_a_server_samples_statistics_carry_its_acceptance_as_a_process_samples_do(tmp_path, replay):
    """The response's counts, or those read from the server's log, give ``metrics.accept`` as the
    process runner's statistics line does (one conversion of ``timings``: parse.server.timings_log)."""
    replay.server.counts_in_log_only = True
    assert run(tmp_path, "--set", "warmup=0").returncode == 0
    spec = [s for s in load_samples(tmp_path / "run") if s.role == "speculative"]
    assert spec and all(s.acceptance and s.metrics.accept == s.acceptance for s in spec)


def test_a_server_that_drafts_gets_no_extra_request(tmp_path, replay):
    r = run(tmp_path, "--set", "warmup=0")
    assert r.returncode == 0, r.stderr
    samples = load_samples(tmp_path / "run")
    assert len(replay.server.requests) == len(samples)
    assert all(s.server_cache_prompt is False for s in samples)


def test_ctrl_c_while_the_server_answers_stops_the_server_and_keeps_the_run(tmp_path, replay):
    replay.server.script = lambda argv, body, n: Take(stop=KeyboardInterrupt()) if n == 3 else Take()
    r = run(tmp_path)
    assert r.returncode == 130 and "Traceback" not in r.stderr, r.stderr
    assert replay.server.starts and sorted(replay.server.stopped) == [
        95000 + n for n in range(len(replay.server.starts))
    ]
    assert load_manifest(tmp_path / "run").status == "interrupted"
    assert len(load_samples(tmp_path / "run")) == 2  # the warmup, then the baseline's two prompts


def test_two_builds_interleave_with_the_server_runner_a_server_per_build_and_setting(tmp_path, replay):
    """Two labels of one build (an A/A) on the server runner: every baseline, cell, draft alone and
    bracketing baseline runs twice in a row, a then b in repetition 0, b then a in 1, each build on
    a server of its own (one per build, setting and repetition), each cell judged against its own
    build's baseline."""
    builds = "llama_cpp=[{label: a, backend: cpu}, {label: b, backend: cpu}]"
    r = run(tmp_path, "--set", builds, "--set", "repetitions=2", "--set", "warmup=0",
            "--set", "prompts.ids=[code-02]")  # fmt: skip
    assert r.returncode == 0, r.stderr
    samples = load_samples(tmp_path / "run")
    check_interleaved(samples, n=16)  # the server runner measures each baseline again after (A B A)
    assert {s.runner for s in samples} == {"server"}
    assert sum(s.role == "baseline-after" for s in samples) == 4
    servers = sorted(p.name for p in (tmp_path / "run" / "raw").glob("*-server.stderr"))
    assert len(servers) == 16 and sum("-a-" in n for n in servers) == sum("-b-" in n for n in servers) == 8
    assert load_manifest(tmp_path / "run").model_loads == 16


def test_a_method_that_keeps_state_gets_a_fresh_server_per_sample_warmed_by_no_measured_prompt(
    tmp_path, replay
):
    """Issue 42: llama-server's ngram-mod pool outlived a request, so a later repetition drafted
    from what an earlier one had put there (3.74x). Each of its samples now gets a server of its
    own, warmed with a short unrelated request: no server answers two measured requests, and no
    warmup carries a measured prompt's text."""
    r = run(tmp_path, "--set", "sweep.method=[ngram-mod]", "--set", "repetitions=2", "--set", "warmup=1")
    assert r.returncode == 0, r.stderr
    spec = [s for s in load_samples(tmp_path / "run") if s.role == "speculative"]
    assert len(spec) == 4 and all(s.status == "ok" for s in spec), [s.invalid_reason for s in spec]
    stateful = [argv for argv in replay.server.starts if "ngram-mod" in argv]
    assert len(stateful) == len(spec)  # a server per sample
    per_server: dict[int, list[dict]] = {}
    for argv, body in replay.server.requests:
        if "ngram-mod" in argv:
            per_server.setdefault(id(argv), []).append(body)
    assert len(per_server) == len(spec)
    measured = [body["prompt"] for bodies in per_server.values() for body in bodies[1:]]
    for warmup, *asked in per_server.values():
        assert len(asked) == 1 and warmup["n_predict"] == 2  # one measured request a server
        assert not any(warmup["prompt"] in text for text in measured)  # primes nothing it measures

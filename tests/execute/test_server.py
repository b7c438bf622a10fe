"""The server runner with the real llama-server of the pinned build on SmolLM2: a small sweep at
parallel 1 and 2 through the CLI (every draft sample valid and equal to its baseline, one model load
per server setting), and the ways a server fails: a model that does not load, a port that is taken,
a server killed while it answers. Kept small: 16 tokens, two short prompts, one repetition. The
faults are `integration` (issue 60): tests/execute/test_server_replay.py proves their rules over
replayed servers in `make test`; the shared run (``server_run``) stays in its small real tier.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from specbench.builder.toolkit import detect_backend
from specbench.execute.judge import judge
from specbench.execute.runner import execute
from specbench.execute.server import ServerError, start_server
from specbench.execute.server_executor import ServerExecutor
from specbench.machine.envinfo import collect
from specbench.plan.config import config_from_mapping
from specbench.plan.prompts import render
from specbench.plan.serverplan import server_argv
from specbench.plan.sweep import make_plan
from specbench.results.manifest import Manifest
from specbench.results.manifestfile import load_manifest
from specbench.results.records import Generation
from specbench.results.samplelog import load_samples
from tests.fixtures.build import cli_process as cli
from tests.helpers.procs import children_named
from tests.helpers.realruns import server_config, threads
from tests.models.tiny_gguf import write_tiny_gguf

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server_run(tmp_path_factory, llama_build, smol_target, smol_q4):
    tmp = tmp_path_factory.mktemp("server")
    config = tmp / "srv.yaml"
    data = server_config(tmp, smol_target, smol_q4, warmup=0, sentinel=True)  # it reads the sentinel
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    run_dir = tmp / "results" / "run"
    env = {"SPECBENCH_RESULTS": str(tmp / "results")}
    result = cli("run", str(config), "--out", str(run_dir), env=env, timeout=1800)
    return result, run_dir, config


def test_server_run_matches_baseline_with_one_load_per_setting(server_run):
    result, run_dir, _ = server_run
    assert result.returncode == 0, result.stderr[-3000:]
    samples = load_samples(run_dir)
    assert {(s.runner, s.parallel) for s in samples} == {("server", 1), ("server", 2)}
    spec = [s for s in samples if s.role == "speculative"]
    assert len(spec) == 4  # 2 prompts x parallel 1 and 2
    for s in samples:
        assert s.status == "ok" and s.valid, s.invalid_reason
        assert s.tps > 0 and s.ttft_ms > 0 and 0 < s.timings.predicted_n == s.n_generated <= 16  # or EOS
        assert (run_dir / s.stdout_path).is_file() and (run_dir / s.stderr_path).is_file()
    for s in spec:
        assert s.outputs_match is True and s.acceptance > 0 and s.timings.draft_n > 0
        assert {"--spec-type", "--spec-draft-model", "--cache-ram"} <= set(s.cmd)
    # at parallel 2 both prompts were one batch, in flight together
    pairs = [s for s in samples if s.parallel == 2 and s.role == "baseline"]
    assert len({s.batch for s in pairs}) == 1 and len({s.batch_wall_s for s in pairs}) == 1
    settings = {tuple(s.cmd) for s in samples}
    assert len(settings) == 5  # baseline and draft cell at P=1 and P=2, the draft alone once
    # the bracket: the baseline server again after the speculative one, the same requests
    after = [s for s in samples if s.role == "baseline-after"]
    before = [s for s in samples if s.role == "baseline"]

    def where(xs):
        return sorted((s.parallel, s.prompt_id) for s in xs)

    assert where(after) == where(before)
    assert {tuple(s.cmd) for s in after} == {tuple(s.cmd) for s in before}
    assert min(s.started_at for s in after) >= max(s.started_at for s in spec if s.parallel == 1)
    manifest = load_manifest(run_dir)
    loads = len(settings) + 2  # the baseline server starts again after the speculative one, at P=1 and 2
    assert manifest.runner == "server" and 0 < manifest.model_loads <= loads
    speed = manifest.noise.speed  # the sentinel: a llama-completion decode at the start and the end
    assert [r.phase for r in speed.readings][:1] == ["before"] and speed.readings[-1].phase == "after"
    assert all(r.tps and r.tps > 0 for r in speed.readings) and len(speed.windows) == 2
    server_logs = list((run_dir / "raw").glob("*-server.stderr"))
    assert len(server_logs) == manifest.model_loads


def test_server_report_rows_carry_runner_parallel_throughput(server_run):
    result, run_dir, _ = server_run
    assert result.returncode == 0, result.stderr[-3000:]
    report = cli("report", str(run_dir), "--format", "json", "--out", str(run_dir / "rep"))
    assert report.returncode == 0, report.stderr[-2000:]
    rows = [r for r in json.loads(report.stdout) if r["category"] == "all"]
    assert sorted(r["parallel"] for r in rows) == [1, 2]
    for r in rows:
        assert r["runner"] == "server" and r["valid"] and r["outputs_match"] is True
        assert r["throughput_tps"] > 0 and r["baseline_throughput_tps"] > 0 and r["ttft_ms"] > 0
        assert r["spec_tps"] > 0 and r["baseline_tps"] > 0
        assert r["baseline_window"] in ("before", "after")  # the nearer of the bracket's two windows
    # the closing table of `run` is the one `report` prints: on a wide terminal it shows the server's
    # columns (at 80 columns they are among the first left out since the same-span columns joined)
    wide = cli("report", str(run_dir), "--out", str(run_dir / "rep2"), env={"COLUMNS": "250"})
    assert wide.returncode == 0, wide.stderr[-2000:]
    assert "throughput" in wide.stdout and "parallel" in wide.stdout  # its header may wrap


def test_dry_run_shows_server_commands_and_requests(server_run):
    _, _, config = server_run
    result = cli("run", str(config), "--dry-run")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    servers = [ln for ln in lines if "llama-server" in ln and not ln.startswith("#")]
    requests = [ln for ln in lines if ln.startswith("POST /completion ")]
    # baseline, draft cell, baseline again (the bracket) at P=1 and P=2, the draft alone once
    assert len(servers) == 7 and all("--port 0" in ln and "-np" in ln for ln in servers)
    assert len(requests) == 14
    body = json.loads(requests[0].removeprefix("POST /completion "))
    assert body["cache_prompt"] is False and body["temperature"] == 0 and body["n_predict"] == 16


def measure(executor: ServerExecutor, inv, index: int, run_dir: Path):
    """One invocation through the executor and the judge, as the runner does it."""
    return judge(inv, executor.run([(index, inv)], run_dir)[0], "t", "now").sample


def _manifest(run_dir: Path, build) -> Manifest:
    return Manifest(
        run_id=run_dir.name, name="t", config={}, build=build, env=collect(detect_backend), models={}
    )


@pytest.mark.integration  # replayed in make test: see docs/development.md
def test_a_model_that_does_not_load_fails_its_samples_once(tmp_path, llama_build, smol_target, smol_q4):
    # a readable header (planning reads it: a corrupt one is refused before anything runs, a one-line
    # ModelError) whose llama weights are missing: llama-server starts and fails to load it
    bad = write_tiny_gguf(tmp_path / "weightless.gguf")
    data = server_config(tmp_path, smol_target, smol_q4, sweep={"draft_max": [8], "parallel": [1]})
    config = config_from_mapping(data, tmp_path, "t.yaml")
    prompts = [render(p, "f32", None) for p in config.prompt_list()]
    plan = make_plan(config, llama_build, {"f32": bad, "q4": smol_q4.path}, prompts)
    run_dir = tmp_path / "run"
    assert plan.runner == "server" and plan.server_warmup == 1
    execute(plan, run_dir, _manifest(run_dir, llama_build))  # the plan's runner: requests to servers
    samples = load_samples(run_dir)
    target = [s for s in samples if s.model == "f32"]
    assert target and all(s.status == "failed" and not s.valid for s in target)
    assert all("llama-server exited" in s.invalid_reason for s in target), target[0].invalid_reason
    alone = [s for s in samples if s.role == "draft"]
    assert alone and all(s.status == "ok" for s in alone)  # the draft model alone still ran
    # one load attempt per setting, not one per sample
    assert load_manifest(run_dir).model_loads == len({tuple(s.cmd) for s in samples})


@pytest.mark.integration  # replayed in make test: see docs/development.md
def test_a_taken_port_is_a_clear_error(tmp_path, llama_build, smol_q4):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        argv = server_argv(llama_build.binary("server"), str(smol_q4.path), Generation(threads=2), 0, 1)
        argv[argv.index("--port") + 1] = str(port)
        with pytest.raises(ServerError) as info:
            start_server(argv, tmp_path / "s.out", tmp_path / "s.err", timeout_s=60)
    assert "llama-server exited" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.integration  # replayed in make test: see docs/development.md
def test_a_dying_or_hung_server_fails_its_request_and_the_next_one_restarts(tmp_path, llama_build, smol_q4):
    data = server_config(tmp_path, smol_q4, smol_q4, pairs={"q": {"target": "q4", "method": "ngram-simple"}})
    data["models"] = {"q4": {"path": str(smol_q4.path)}}
    data["sweep"] = {"method": ["ngram-simple"], "parallel": [1]}
    data["generation"]["ctx_size"] = 4096  # room for the endless request below
    config = config_from_mapping(data, tmp_path, "t.yaml")
    prompts = [render(p, "q4", None) for p in config.prompt_list()]
    plan = make_plan(config, llama_build, {"q4": smol_q4.path}, prompts)
    base = [i for i in plan.invocations if i.role == "baseline"][0]
    endless = base.request.model_copy(update={"n_predict": 3000, "ignore_eos": True})
    long = base.model_copy(update={"request": endless})
    run_dir = tmp_path / "run"
    executor = ServerExecutor(warmup=0)
    try:
        assert measure(executor, base, 0, run_dir).status == "ok"
        pid = executor._server.proc.pid
        killer = threading.Timer(0.5, os.killpg, (pid, signal.SIGKILL))  # dies while it answers
        killer.start()
        died = measure(executor, long, 1, run_dir)
        killer.join()
        assert died.status == "failed" and "llama-server exited (killed by SIGKILL" in died.invalid_reason
        assert measure(executor, base, 2, run_dir).status == "ok"  # a fresh server
        pid = executor._server.proc.pid
        hung = measure(executor, long.model_copy(update={"timeout_s": 0.5}), 3, run_dir)
        assert hung.status == "timeout" and "no answer in 0.5 s" in hung.invalid_reason
        assert executor._server is None  # a server that did not answer in time is stopped
        assert not _group_alive(pid)
        assert executor.model_loads == 2
    finally:
        executor.close()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.integration  # replayed in make test: see docs/development.md
def test_ctrl_c_kills_the_server(tmp_path, llama_build, smol_target, smol_q4):
    data = server_config(tmp_path, smol_target, smol_q4, warmup=0, sweep={"draft_max": [8], "parallel": [1]})
    data["generation"]["n_predict"] = 400  # long enough to be interrupted while the server answers
    config = tmp_path / "srv.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "specbench", "run", str(config), "--out", str(run_dir), "--quiet"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    servers: list[int] = []
    while not servers and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
        servers = children_named(proc.pid, "llama-server")
    assert servers, "no llama-server was started"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err.decode()[-2000:]
    assert all(not _group_alive(pid) for pid in servers)
    assert load_manifest(run_dir).status == "interrupted"


@pytest.mark.integration  # the judge's rule for a server sample is replayed in make test (test_judge.py)
def test_a_prompt_the_context_cannot_hold_is_refused_before_the_server_starts(tmp_path, llama_build, smol_q4):
    """ctx_size 64 and a ~200-token prompt: llama-server would round each slot up to 256 tokens and
    answer, so nothing of llama.cpp's would say the prompt did not fit. The plan counts the prompt's
    tokens with the target's vocabulary and refuses the run before any server starts, naming the
    prompt and the context, as for the process runner (issue 58 item 12)."""
    long = "The quick brown fox jumps over the lazy dog. " * 20
    prompts = tmp_path / "long.jsonl"
    prompts.write_text(json.dumps({"id": "long", "category": "chat", "text": long}) + "\n")
    data = dict(
        name="ctx", runner="server", models={"q4": {"path": str(smol_q4.path)}},
        pairs={"lookup": {"target": "q4", "method": "ngram-simple"}}, prompts={"file": str(prompts)},
        generation={"n_predict": 8, "threads": threads(), "ctx_size": 64}, repetitions=1, warmup=0,
        timeout_s=120,
    )  # fmt: skip
    config = tmp_path / "ctx.yaml"
    config.write_text(yaml.safe_dump(data))
    run_dir = tmp_path / "run"
    env = {"SPECBENCH_RESULTS": str(tmp_path)}
    result = cli("run", str(config), "--out", str(run_dir), env=env, timeout=600)
    assert result.returncode == 2, result.stderr[-2000:]
    error = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "'long'" in error[0] and "ctx_size 64" in error[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr and not (run_dir / "samples.jsonl").exists()

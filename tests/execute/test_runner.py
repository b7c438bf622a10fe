"""The runner against faults: stand-in executables (tests/fakebins) for crashes, hangs, silence and
speculation that never engages; a real disk filling up (tmpfs); a held lock; an unwritable folder;
Ctrl-C. The code under test is the real runner; only the llama.cpp binaries are stand-ins here.
The real-binary end-to-end run is in tests/cli/test_run.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from specbench.base.errors import InputError, RunError
from specbench.execute.runner import RunInterrupted, execute
from specbench.results.manifestfile import load_manifest
from specbench.results.records import Generation
from specbench.results.runlock import RunLock
from specbench.results.samplelog import load_samples
from tests.helpers.fakeruns import inv, manifest, process
from tests.helpers.procs import gone
from tests.helpers.realruns import threads


def test_faults_are_recorded_and_the_run_goes_on(tmp_path, env_info):
    plan = [
        inv("nodraft", warmup=True),
        inv("exit1", role="baseline", prompt_id="exit1"),
        inv("segfault", prompt_id="segv"),
        inv("silent", prompt_id="silent"),
        inv("nodraft", prompt_id="nodraft"),
        inv("sleeper", prompt_id="hang", timeout_s=1.0),
    ]
    run_dir = tmp_path / "run"
    events = []
    result = execute(process(plan), run_dir, manifest(run_dir, env_info), progress=events.append)
    samples = {s.prompt_id: s for s in load_samples(run_dir)}
    assert list(samples) == ["exit1", "segv", "silent", "nodraft", "hang"]  # the warmup is not a sample
    assert len(result.samples) == 5 and result.n_new == 5
    s = samples["exit1"]
    assert (s.status, s.valid, s.exit_code) == ("failed", False, 1)
    assert s.invalid_reason == "exit code 1: main: error: failed to load model 'missing.gguf'"
    s = samples["segv"]
    assert s.status == "failed" and s.exit_code is None and s.invalid_reason == "killed by SIGSEGV"
    assert (
        samples["silent"].status == "failed" and samples["silent"].invalid_reason == "no statistics in output"
    )
    s = samples["nodraft"]
    assert (s.status, s.valid) == ("invalid", False)
    assert s.invalid_reason == "speculation never engaged (n_drafted = 0)"
    assert s.metrics.n_drafted == 0 and s.tps == 32.0 and s.acceptance is None
    assert s.output_sha256 is not None  # the continuation was still extracted
    s = samples["hang"]
    assert s.status == "timeout" and "timed out after 1 s" in s.invalid_reason and 1.0 <= s.wall_s < 5
    pids = dict(line.split() for line in (run_dir / s.stdout_path).read_text().splitlines())
    assert all(gone(int(p)) for p in pids.values()), "the hung binary's process group survived"
    for sample in samples.values():  # every log is kept, next to its sample
        assert (run_dir / sample.stdout_path).is_file() and (run_dir / sample.stderr_path).is_file()
    assert load_manifest(run_dir).status == "complete"
    kinds = [e.kind for e in events]
    assert kinds[0] == "start" and kinds.count("warmup") == 1 and kinds.count("sample") == 5
    assert events[-1].done == events[-1].total == 6


def test_second_run_on_a_locked_folder_is_refused(tmp_path, env_info):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with RunLock(run_dir):
        going = r"still running \(process \d+ holds .*\.lock\); wait for it to finish or choose another --out"
        with pytest.raises(RunError, match=going) as exc:
            execute(process([inv("nodraft")]), run_dir, manifest(run_dir, env_info))
    assert "\n" not in str(exc.value)
    assert not (run_dir / "samples.jsonl").exists()
    # a lock held by another process (the way two real runs collide)
    holder = subprocess.Popen(
        ["python3", "-c", "import fcntl,sys,time; f=open(sys.argv[1],'w'); fcntl.flock(f, fcntl.LOCK_EX); "
         "print('locked', flush=True); time.sleep(30)", str(run_dir / ".lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunError, match=r"still running \(a process holds"):  # no pid written
            execute(process([inv("nodraft")]), run_dir, manifest(run_dir, env_info))
    finally:
        holder.kill()
        holder.wait()
    execute(process([inv("nodraft")]), run_dir, manifest(run_dir, env_info))  # the lock died with its process
    assert len(load_samples(run_dir)) == 1


def test_new_run_refuses_a_folder_that_holds_a_run(tmp_path, env_info):
    run_dir = tmp_path / "run"
    execute(process([inv("nodraft")]), run_dir, manifest(run_dir, env_info))
    with pytest.raises(
        InputError, match="already holds a run; choose another --out .or continue that run with"
    ):
        execute(process([inv("nodraft")]), run_dir, manifest(run_dir, env_info))
    # a tune or merge folder is not continued with `run --resume`: only another --out is offered
    data = json.loads((run_dir / "manifest.json").read_text())
    (run_dir / "manifest.json").write_text(
        json.dumps({**data, "command_line": ["specbench", "tune", "c.yaml"]})
    )
    with pytest.raises(InputError, match=r"choose another --out$"):
        execute(process([inv("nodraft")]), run_dir, manifest(run_dir, env_info))


def _mount_tmpfs(where: Path, options: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True).returncode == 0  # fmt: skip


def _umount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_unwritable_results_folder_fails_before_running_anything(tmp_path, env_info):
    ro = tmp_path / "ro"
    if _mount_tmpfs(ro, "ro,size=64k"):
        cleanup = lambda: _umount(ro)  # noqa: E731
    elif os.geteuid() != 0:
        ro.mkdir()
        ro.chmod(0o555)
        cleanup = lambda: ro.chmod(0o755)  # noqa: E731
    else:
        pytest.skip("root without mount: no way to make a folder unwritable here")
    marker = tmp_path / "ran"
    try:
        plan = [inv("nodraft", argv=["/bin/touch", str(marker)])]
        with pytest.raises(RunError, match="is not writable") as exc:
            execute(process(plan), ro / "run", manifest(ro / "run", env_info))
        assert "--out" in str(exc.value) and "\n" not in str(exc.value)
        assert not marker.exists()
    finally:
        cleanup()


def test_disk_full_keeps_earlier_samples_and_resume_completes(tmp_path, env_info):
    disk = tmp_path / "disk"
    plan = [inv("nodraft", prompt_id=f"p{i:02d}") for i in range(40)]
    if _mount_tmpfs(disk, "size=48k"):
        run_dir = disk / "run"
        free_space = lambda: subprocess.run(["mount", "-o", "remount,size=4m", str(disk)], check=True)  # noqa: E731
    else:  # not root: the samples file is /dev/full, which fails every write with ENOSPC
        run_dir = disk / "run"
        run_dir.mkdir(parents=True)
        (run_dir / "samples.jsonl").symlink_to("/dev/full")
        free_space = lambda: (run_dir / "samples.jsonl").unlink()  # noqa: E731
    try:
        with pytest.raises(RunError, match="No space left on device.*earlier samples are intact") as exc:
            execute(
                process(plan),
                run_dir,
                manifest(run_dir, env_info),
                resume=(run_dir / "samples.jsonl").is_symlink(),
            )
        assert "--resume" in str(exc.value)
        kept = load_samples(run_dir) if (run_dir / "samples.jsonl").is_file() else []
        assert len(kept) < len(plan)
        assert [s.prompt_id for s in kept] == [f"p{i:02d}" for i in range(len(kept))]  # no torn or lost line
        lines = (run_dir / "samples.jsonl").read_bytes() if kept else b""
        assert lines.count(b"\n") == len(kept) and (not lines or lines.endswith(b"\n"))
        free_space()
        man = load_manifest(run_dir) if (run_dir / "manifest.json").is_file() else manifest(run_dir, env_info)
        execute(process(plan), run_dir, man, resume=True)
        assert [s.prompt_id for s in load_samples(run_dir)] == [f"p{i:02d}" for i in range(40)]
        assert load_manifest(run_dir).status == "complete"
    finally:
        if disk.is_mount():
            _umount(disk)


def test_ctrl_c_keeps_finished_samples_kills_the_child_and_resume_skips_them(tmp_path, env_info):
    # Python raises KeyboardInterrupt on SIGINT only if it was not ignored at start-up, and a shell
    # starts background jobs (`make test &`, CI wrappers) with SIGINT ignored: Ctrl-C as a terminal
    # delivers it, explicitly.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_run(tmp_path, env_info)
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_run(tmp_path, env_info):
    plan = [
        inv("nodraft", warmup=True),
        inv("nodraft", prompt_id="a"),
        inv("sleeper", prompt_id="b", timeout_s=30.0),
        inv("nodraft", prompt_id="c"),
    ]
    run_dir = tmp_path / "run"
    timers = []

    def progress(event):
        if event.kind == "begin" and event.invocation.prompt_id == "b":
            timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
            timer.start()
            timers.append(timer)

    with pytest.raises(RunInterrupted) as exc:
        execute(process(plan), run_dir, manifest(run_dir, env_info), progress=progress)
    assert exc.value.exit_code == 130 and exc.value.n_kept == 1
    assert [s.prompt_id for s in load_samples(run_dir)] == ["a"]  # the partial one is discarded
    man = load_manifest(run_dir)
    assert man.status == "interrupted" and man.finished_at is not None
    hung = next(run_dir.glob("raw/*-b-r0.stdout.partial"))  # cut short: marked, not a whole log
    pids = dict(line.split() for line in hung.read_text().splitlines())
    assert all(gone(int(p)) for p in pids.values()), "Ctrl-C left the running binary behind"
    assert not list(run_dir.glob("raw/*-b-r0.stdout")) and not list(run_dir.glob("raw/*-b-r0.stderr"))

    events = []
    resumed = [*plan[:2], inv("nodraft", prompt_id="b"), plan[3]]
    result = execute(process(resumed), run_dir, man, progress=events.append, resume=True)
    assert [s.prompt_id for s in load_samples(run_dir)] == ["a", "b", "c"]
    assert result.n_new == 2 and len(result.samples) == 3
    assert [e.kind for e in events if e.kind in ("warmup", "skipped", "sample")] == [
        "warmup", "skipped", "sample", "sample"
    ]  # fmt: skip
    man = load_manifest(run_dir)
    assert man.status == "complete" and len(man.resumed_at) == 1
    _raw_names_are_unique(run_dir)


def _raw_names_are_unique(run_dir: Path) -> None:
    """Every log's number is its own, and every whole log belongs to a recorded sample or a warmup."""
    stems = {p.name.split(".")[0] for p in (run_dir / "raw").iterdir() if not p.name.endswith(".partial")}
    numbers = [stem.split("-")[0] for stem in stems]
    assert len(numbers) == len(set(numbers)), sorted(stems)
    recorded = {Path(s.stderr_path).name.split(".")[0] for s in load_samples(run_dir)}
    assert {s for s in stems if "-warmup-" not in s} == recorded


def test_resume_after_a_kill_marks_orphan_logs_and_numbers_on(tmp_path, env_info):
    """A run killed outright (SIGKILL, power cut) leaves its last invocation's logs and no sample;
    --resume marks them partial, and its own logs never reuse a number."""
    plan = [inv("nodraft", warmup=True), inv("nodraft", prompt_id="a"), inv("nodraft", prompt_id="b")]
    run_dir = tmp_path / "run"
    man = manifest(run_dir, env_info)
    execute(process(plan[:2]), run_dir, man)
    (run_dir / "raw" / "0002-speculative-target-draft-n8-b-r0.stderr").write_text("half a log")
    (run_dir / "raw" / "0002-speculative-target-draft-n8-b-r0.stdout").write_text("half")
    (warmup,) = (run_dir / "raw").glob("*-warmup-*.stderr")  # finished: kept as it is
    (run_dir / "raw" / "0003-warmup-target-draft-n8-a-r0.stderr").write_text("a warmup killed early")
    execute(process(plan), run_dir, man, resume=True)
    assert sorted(p.name for p in (run_dir / "raw").glob("*.partial")) == [
        "0002-speculative-target-draft-n8-b-r0.stderr.partial",
        "0002-speculative-target-draft-n8-b-r0.stdout.partial",
        "0003-warmup-target-draft-n8-a-r0.stderr.partial",
    ]
    assert warmup.is_file()
    assert [s.prompt_id for s in load_samples(run_dir)] == ["a", "b"]
    assert all(int(p.name[:4]) >= 4 for p in (run_dir / "raw").glob("*-r0.std*") if "-b-" in p.name
               and not p.name.endswith(".partial"))  # fmt: skip
    _raw_names_are_unique(run_dir)


@pytest.mark.slow
def test_prompt_longer_than_the_context_fails_with_that_reason(tmp_path, llama_build, smol_q4, monkeypatch):
    """Real binaries, ``-c 32``: llama-completion aborts in get_sub_batch, llama-speculative-simple
    says the prompt exceeds the batch size; both samples fail with the reason, and the run completes.

    The plan refuses such a prompt before anything runs (plan/fit.py); its count is a lower bound
    of llama.cpp's, so a prompt can still reach llama.cpp too long (another chat template, a
    tokenizer the count does not know). The check is switched off here to show that rule."""
    from specbench.execute import benchmark, preparation
    from specbench.plan import sweep
    from specbench.plan.config import load_config

    monkeypatch.setattr(sweep, "check_fit", lambda *a, **k: None)

    config = tmp_path / "tiny.yaml"
    config.write_text(
        f"name: tiny\nmodels:\n  q4: {{path: {smol_q4.path}}}\n"
        "pairs:\n  p: {target: q4, method: ngram-simple}\nprompts: {ids: [code-01]}\n"
        f"generation: {{n_predict: 8, threads: {threads()}, ctx_size: 32}}\n"
        "repetitions: 1\nwarmup: 0\ntimeout_s: 120\n"
    )
    prepared = preparation.prepare(load_config(config))
    summary = benchmark.run_benchmark(prepared, tmp_path / "run")
    samples = load_samples(tmp_path / "run")
    assert [s.role for s in samples] == ["baseline", "speculative"]
    for s in samples:
        assert s.status == "failed" and not s.valid
        assert s.invalid_reason.startswith("prompt longer than the context ("), s.invalid_reason
    assert "failed to add token" in samples[0].invalid_reason  # llama-completion's abort at a tiny -c
    assert "exceeds the batch size" in samples[1].invalid_reason
    assert load_manifest(tmp_path / "run").status == "complete" and summary.n_failed == 2


def test_the_cells_a_plan_left_out_are_kept_in_the_manifest_once_across_a_resume(tmp_path, env_info):
    """A draft out of its context at a depth is not run (plan.depth.draft_out_of_context); the
    manifest keeps the cell and why, so the report names it where it would have stood."""
    from specbench.results.cell import Cell, LeftOut

    cell = Cell(pair="pair", model="target", draft="draft", method="draft", draft_max=8, depth=4096)
    left = LeftOut(cell=cell, reason="draft out of context: pair draft at depth 4096 is not run: ...")
    plan = process([inv("nodraft", role="baseline")]).model_copy(update={"left_out": [left]})
    run_dir = tmp_path / "run"
    execute(plan, run_dir, manifest(run_dir, env_info))
    assert load_manifest(run_dir).left_out == [left]
    execute(plan, run_dir, load_manifest(run_dir), resume=True)
    assert load_manifest(run_dir).left_out == [left]


def test_a_speculative_program_without_a_step_log_is_timed_over_the_baselines_tokens(tmp_path, env_info):
    """tests/fakebins/classic (the 2024 llama-speculative's shape: no step log, 8 tokens decoded at
    -n 6) is handed its baseline's text by the runner and cut where it ends in its stamped stdout:
    both sides timed over the baseline's 6 tokens (judge.capped_span)."""
    six = Generation(n_predict=6)
    run_dir = tmp_path / "run"
    plan = [inv("plain", role="baseline", generation=six), inv("classic", generation=six)]
    execute(process(plan), run_dir, manifest(run_dir, env_info))
    base, spec = load_samples(run_dir)
    assert spec.status == "ok" and spec.outputs_match and spec.metrics.decoded.tokens == 8
    assert spec.timed_tokens == base.timed_tokens == 6

"""`run --resume` refuses what it cannot continue honestly, before anything is built or fetched:
a folder from a newer specbench (run folders are a versioned format) and a folder made on another
machine (unless --force, which the manifest then records). The folders are copies of a recorded
real run (tests/data/runs/quick-cpu) with one fact changed."""

from __future__ import annotations

import json
import platform
import shutil
from pathlib import Path

import pytest

from specbench.base.errors import RunError
from specbench.execute import benchmark
from specbench.results.manifest import FORMAT_VERSION
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.fixtures.build import assert_one_line_error, cli

QUICK = Path(__file__).resolve().parents[1] / "data/runs/quick-cpu"


def _copy(tmp_path: Path, **changes) -> Path:
    run = shutil.copytree(QUICK, tmp_path / "run")
    data = json.loads((run / "manifest.json").read_text())
    for key, value in changes.items():
        target = data
        *parents, last = key.split(".")
        for p in parents:
            target = target[p]
        target[last] = value
    (run / "manifest.json").write_text(json.dumps(data))
    return run


def _here(**changes) -> dict:
    """This machine's hostname, CPU and GPUs as manifest changes, with ``changes`` on top: the
    recorded run was made on another CPU (an AMD EPYC), so a test meaning one difference (a
    hostname) must not inherit that one too (issue 36: it failed on an Intel machine)."""
    from specbench.builder.toolkit import detect_backend
    from specbench.machine.envinfo import collect

    here = collect(detect_backend)
    return {"env.hostname": here.hostname, "env.cpu_model": here.cpu_model,
            "env.gpus": [g.model_dump() for g in here.gpus], **changes}  # fmt: skip


def test_resume_refuses_a_folder_from_a_newer_specbench(tmp_path):
    run = _copy(tmp_path, format_version=FORMAT_VERSION + 1, specbench_version="9.0.0")
    for args in (["run", "--resume", str(run)], ["report", str(run)]):
        result = cli(*args)
        assert_one_line_error(result, f"format {FORMAT_VERSION + 1} (written by specbench 9.0.0)",
                              f"reads formats up to {FORMAT_VERSION}")  # fmt: skip


def test_resume_refuses_a_folder_made_on_another_machine(tmp_path):
    here = platform.node()
    run = _copy(tmp_path, **_here(**{"env.hostname": f"not-{here}", "env.cpu_model": "Some Other CPU"}))
    samples = load_samples(run)
    result = cli("run", "--resume", str(run))
    assert_one_line_error(result, "was made on another machine", f"hostname not-{here}, here {here}",
                          "CPU Some Other CPU, here",
                          f"continue anyway with `specbench run --resume {run} --force`")  # fmt: skip
    assert load_samples(run) == samples and load_manifest(run).status == "complete"  # nothing touched


def test_force_resumes_elsewhere_and_the_manifest_says_so(tmp_path):
    run = _copy(tmp_path, **_here(**{"env.hostname": "elsewhere"}))
    manifest = load_manifest(run)
    with pytest.raises(RunError, match="hostname elsewhere, here"):
        benchmark.check_resume_machine(run, force=False)
    benchmark.check_resume_machine(run, force=True)  # the early check lets it through
    benchmark.check_same_machine(manifest, run, force=True)  # run_benchmark's records it
    assert manifest.other_machines == [f"hostname elsewhere, here {platform.node()}"]


def test_the_same_machine_resumes_without_force(tmp_path):
    run = _copy(tmp_path, **_here())
    benchmark.check_resume_machine(run, force=False)


def test_resume_refuses_a_tune_folder_and_report_does_not_suggest_it(tmp_path):
    """A tune round pairs its speedups with its own baseline; `run --resume` would plan the last
    round afresh against old baselines, so it is refused, and an interrupted tune's report says
    to run tune again instead."""
    run = _copy(
        tmp_path, command_line=["specbench", "tune", "ci.yaml", "--budget", "60"], status="interrupted"
    )
    for args in (["run", "--resume", str(run)], ["run", "--resume", str(run), "--dry-run"]):
        assert_one_line_error(cli(*args), "written by `specbench tune`", "run `specbench tune` again")
    report = cli("report", str(run), "--out", str(tmp_path / "rep"))
    assert "specbench run --resume" not in report.stdout + report.stderr
    assert "run `specbench tune` again" in " ".join((report.stdout + report.stderr).split())


def test_a_dry_resume_refuses_what_the_resume_would(tmp_path):
    """`run --resume DIR --dry-run` makes the real resume's refusals (another config, a run still
    going, another machine) and says what reading the samples dropped, instead of listing work."""
    from specbench.results.runlock import RunLock

    run = _copy(tmp_path, **_here())
    lines = (run / "samples.jsonl").read_text().splitlines()
    (run / "samples.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n")
    ok = cli("run", "--resume", str(run), "--dry-run")
    assert ok.returncode == 0, ok.stderr
    assert "1 duplicate sample was dropped" in " ".join(ok.stdout.split())
    assert_one_line_error(
        cli("run", "--resume", str(run), "--dry-run", "--set", "generation.n_predict=24"), "different config"
    )
    with RunLock(run):
        assert_one_line_error(cli("run", "--resume", str(run), "--dry-run"), "still running")
    elsewhere = _copy(tmp_path / "b", **_here(**{"env.hostname": "elsewhere"}))
    assert_one_line_error(
        cli("run", "--resume", str(elsewhere), "--dry-run"), "another machine", "(hostname elsewhere, here"
    )


def test_run_without_a_config_or_a_run_to_resume_is_refused():
    """Neither CONFIG nor --resume: one line that names both, before anything is built."""
    assert_one_line_error(cli("run"), "give a CONFIG", "--resume RUN_DIR")


def test_a_new_run_into_a_folder_whose_run_is_going_says_so_and_not_resume(tmp_path):
    """The lock would refuse `--resume` while the run is going: the message names the process that
    holds it and says to wait or choose another --out, and never suggests the resume."""
    import os

    from specbench.results.runlock import RunLock

    run = _copy(tmp_path, **_here())
    with RunLock(run):
        err = assert_one_line_error(cli("run", "configs/ci.yaml", "--out", str(run)), "still running")
        assert f"process {os.getpid()}" in err and "another --out" in err
        assert "--resume" not in err
    err = assert_one_line_error(cli("run", "configs/ci.yaml", "--out", str(run)), "already holds a run")
    assert "still running" not in err

"""`specbench run` end to end with the real llama.cpp build and real GGUF models.

One real one-cell sweep (SmolLM2 F32 target + Q4_1 draft, 32 tokens, 2 repetitions), made with an
HF_TOKEN in the environment and then searched for it; Ctrl-C and --resume on a real run; dry runs;
refusals before anything runs. Kept short: a handful of llama.cpp invocations of a 135M model.
"""

from __future__ import annotations

import json
import os
import platform
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from specbench.builder.workaround import workaround_argv
from specbench.parse.process import parse_file
from specbench.parse.span import first_tokens
from specbench.plan.config import load_config
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.fixtures.build import assert_one_line_error
from tests.fixtures.build import cli_process as cli
from tests.fixtures.realrun import TOKEN
from tests.helpers.procs import start_and_signal
from tests.helpers.realruns import one_cell, threads, write_config

pytestmark = pytest.mark.slow


def repeating_prompt(tmp: Path) -> Path:
    """A text prompt repeating a block longer than the n-gram size (12 tokens): its continuation
    repeats it, so ngram-simple drafts even in 16 tokens."""
    block = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
    path = tmp / "repeat.jsonl"
    path.write_text(json.dumps({"id": "rep", "category": "code", "text": (block * 4).rstrip("\n")}) + "\n")
    return path


def test_one_cell_end_to_end(one_cell_run, llama_build, smol_target, smol_q4):
    result, run_dir = one_cell_run.result, one_cell_run.run_dir
    assert result.returncode == 0, result.stderr[-3000:]
    samples = load_samples(run_dir)
    by_role = {r: [s for s in samples if s.role == r] for r in ("baseline", "speculative", "draft")}
    assert [len(by_role[r]) for r in ("baseline", "speculative", "draft")] == [2, 2, 2]  # warmups not stored
    assert [s.repetition for s in samples if s.role == "speculative"] == [0, 1]
    for s in by_role["baseline"] + by_role["draft"]:
        assert s.status == "ok" and s.valid and s.tps > 0 and s.metrics.kind == "completion"
        assert s.n_generated and s.n_generated <= 32
    for s in by_role["speculative"]:
        assert s.status == "ok" and s.valid, s.invalid_reason
        assert s.metrics.n_drafted > 0 and 0 < s.acceptance <= 1
        # the rate over the first n_predict tokens (the binary decodes one more: docs/timing.md),
        # from the step log the run asked for (-lv 5); the baseline timed the same 32 tokens
        base = next(b for b in by_role["baseline"] if b.repetition == s.repetition)
        assert "-lv" in s.cmd and s.timed_tokens == base.timed_tokens <= 32
        log = parse_file(run_dir / s.stderr_path)  # the steps are kept in the raw log only
        capped = first_tokens(log.steps, log.decoded.tokens, log.decoded.seconds, 32)
        assert s.tps == (capped.tps if capped else log.decoded.tps) > 0
        assert s.tokens_per_pass >= 1
        assert s.outputs_match is True and s.first_diff is None  # temperature 0: same text as the target
        assert s.cmd[0].endswith("llama-speculative-simple") and "draft-simple" in s.cmd
        assert (run_dir / s.stdout_path).is_file() and (run_dir / s.stderr_path).stat().st_size > 0
    # at temperature 0 the baseline's two repetitions print the same text
    assert len({s.output_sha256 for s in by_role["baseline"]}) == 1
    man = load_manifest(run_dir)
    assert man.status == "complete" and man.finished_at and man.run_id == "run1"
    assert man.build.commit == llama_build.commit and man.env.cpu_cores >= 1
    assert man.models["f32"].sha256 == smol_target.sha256 and man.models["q4"].sha256 == smol_q4.sha256
    assert man.pair_checks["smol"].ok and man.config["repetitions"] == 2
    assert man.n_samples_planned == 6 and man.plan_size == 9  # 3 warmups: one per binary and model
    assert len(list((run_dir / "raw").glob("*warmup*.stderr"))) == 3
    # the closing table: one row for the cell, with the run folder
    assert "smol" in result.stdout and str(run_dir) in result.stdout
    row = next(line for line in result.stdout.splitlines() if "smol" in line)
    assert "draft" in row and "yes" in row
    # recorded in history (SPECBENCH_RESULTS/history.sqlite)
    with sqlite3.connect(run_dir.parent / "history.sqlite") as db:
        assert db.execute("SELECT run_id FROM runs").fetchall() == [("run1",)]


def test_hf_token_never_reaches_results(one_cell_run):
    result, run_dir = one_cell_run.result, one_cell_run.run_dir
    assert result.returncode == 0
    searched = 0
    for path in [*run_dir.rglob("*"), run_dir.parent / "history.sqlite"]:
        if path.is_file():
            data = path.read_bytes()
            assert TOKEN.encode() not in data, f"the token leaked into {path}"
            searched += 1
    assert searched >= 15  # manifest, samples, 18 raw logs, history
    assert TOKEN not in result.stdout and TOKEN not in result.stderr


def test_dry_run_prints_commands_and_runs_nothing(tmp_path, llama_build, smol_target, smol_q4):
    config = one_cell(tmp_path, smol_target, smol_q4)
    result = cli("run", str(config), "--dry-run", env={"SPECBENCH_RESULTS": str(tmp_path / "results")})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"# build: cached {llama_build.key}" in out
    assert f"# model f32: path:{smol_target.path}" in out and smol_target.sha256[:12] in out
    assert "# pair smol: f32 + q4: ok" in out
    labels = [line for line in out.splitlines() if line.startswith(("# warmup", "# rep"))]
    assert len(labels) == 9 and sum("speculative smol draft draft_max=8" in x for x in labels) == 3
    # it ends with the plan's estimated time (`plan`'s estimator); a short plan lists every command
    assert re.fullmatch(r"# estimated time: \d+ (s|min) for 9 invocations \(.*\)", out.splitlines()[-1])
    assert "left out" not in out
    # each command starts with the binary and the self-test's workaround as it spells it (none where
    # the build decodes here as built; --no-repack where it crashed, e.g. on an AMX CPU)
    spec, completion = (
        " ".join([llama_build.binary(r).path, *workaround_argv(llama_build, r)])
        for r in ("speculative_simple", "completion")
    )
    assert out.count(f"{spec} -m {smol_target.path}") == 3
    assert (
        out.count("--spec-draft-n-max 8 --spec-draft-n-min 0 --spec-draft-p-min 0 --spec-type draft-simple")
        == 3
    )
    assert out.count(f"{completion} -m {smol_q4.path}") == 3  # draft alone
    assert not (tmp_path / "results").exists()


def test_dry_run_of_a_gpu_config_with_models_not_cached(tmp_path, llama_build):
    config = write_config(
        tmp_path / "gpu.yaml",
        name="gpu",
        llama_cpp={"backend": "cuda"},
        models={
            "big": {"hf": {"repo": "specbench-test/Big-GGUF", "file": "big-Q4_K_M.gguf"}},
            "small": {"hf": {"repo": "specbench-test/Small-GGUF", "file": "small-Q8_0.gguf"}},
        },
        pairs={"p": {"target": "big", "draft": "small"}},
        prompts={"categories": ["code"], "limit_per_category": 1},
        sweep={"draft_max": [4, 8], "ngl": [99], "ngld": [99]},
        repetitions=1,
        sentinel=True,
    )
    env = {
        "HF_HUB_OFFLINE": "1",
        "HF_ENDPOINT": "http://127.0.0.1:9",
        "SPECBENCH_RESULTS": str(tmp_path / "r"),
    }
    result = cli("run", str(config), "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "# build: would build" in out and "-DGGML_CUDA=ON" in out
    assert "hf:specbench-test/Big-GGUF/big-Q4_K_M.gguf@main" in out and "not cached" in out
    labels = [line for line in out.splitlines() if line.startswith(("# warmup", "# rep"))]
    assert sum("speculative p draft" in x for x in labels) == 2 + 1  # two draft lengths, plus the warmup
    assert out.count("--spec-draft-ngl 99 --spec-draft-n-max 4 ") == 2  # the warmup is the first cell
    assert out.count("--spec-draft-ngl 99 --spec-draft-n-max 8 ") == 1
    assert "# speed sentinel (at the start, at intervals, at the end):" in out  # its decode: one more
    assert out.count("-ngl 99") == len(labels) + 3 + 1  # every command; speculative ones also have -ngld's 99
    assert not (tmp_path / "r").exists()


def test_incompatible_pair_is_refused_before_running(tmp_path, llama_build, smol_q4, gemma_q4):
    config = write_config(
        tmp_path / "bad.yaml",
        models={"smol": {"path": str(smol_q4.path)}, "gemma": {"path": str(gemma_q4.path)}},
        pairs={"mixed": {"target": "smol", "draft": "gemma"}},
        prompts={"ids": ["code-01"]},
    )
    result = cli("run", str(config), "--out", str(tmp_path / "run"))
    line = assert_one_line_error(result, "mixed", "draft cannot speculate for target")
    assert result.returncode == 1 and line
    assert not (tmp_path / "run").exists()


def test_unwritable_results_folder_is_a_one_line_error(tmp_path, smol_q4):
    config = write_config(
        tmp_path / "c.yaml",
        models={"q4": {"path": str(smol_q4.path)}},
        pairs={"p": {"target": "q4", "method": "ngram-simple"}},
    )
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = cli("run", str(config), "--out", str(blocker / "run"))
    assert_one_line_error(result, "is not writable", "--out")


# integration tier; its rule, replayed: tests/execute/test_runner_replay.py (a test of the same name
# or docs/development.md's table)
@pytest.mark.integration
def test_ctrl_c_keeps_samples_and_resume_completes(tmp_path, llama_build, smol_q4):
    config = write_config(
        tmp_path / "ngram.yaml",
        name="ngram",
        models={"q4": {"path": str(smol_q4.path)}},
        pairs={"lookup": {"target": "q4", "method": "ngram-simple"}},
        prompts={"file": str(repeating_prompt(tmp_path))},  # the lookup drafts: a valid cell, exit 0
        generation={"n_predict": 16, "threads": threads()},
        repetitions=2,
        warmup=0,  # re-running warmups on --resume is checked in tests/test_runner.py
    )
    run_dir = tmp_path / "run"
    env = {**os.environ, "SPECBENCH_RESULTS": str(tmp_path / "results")}
    code, _, err = start_and_signal(config, run_dir, signal.SIGINT, env)
    assert code == 130, err
    assert "Traceback" not in err
    assert f"resume with: specbench run --resume {run_dir}" in err
    kept = load_samples(run_dir)
    assert 1 <= len(kept) < 4
    assert load_manifest(run_dir).status == "interrupted"

    other = cli("run", str(config), "--resume", str(run_dir), "--set", "repetitions=3")
    assert_one_line_error(other, "was run with a different config (repetitions differ)")
    assert len(load_samples(run_dir)) == len(kept)
    dry = cli("run", "--resume", str(run_dir), "--dry-run")  # lists what is left, runs nothing
    assert dry.returncode == 0, dry.stderr
    assert f"{len(kept)} of 4 planned samples are recorded already" in dry.stdout
    assert dry.stdout.count("\n# rep ") == 4 - len(kept) and len(load_samples(run_dir)) == len(kept)

    result = cli(
        "run", str(config), "--resume", str(run_dir), "--quiet", env={"SPECBENCH_RESULTS": str(tmp_path)}
    )
    assert result.returncode == 0, result.stderr[-2000:]
    samples = load_samples(run_dir)
    assert len(samples) == 4  # 2 repetitions x (baseline + speculative)
    assert len({s.sample_key() for s in samples}) == 4  # nothing ran twice
    assert [s.sample_key() for s in samples[: len(kept)]] == [s.sample_key() for s in kept]
    man = load_manifest(run_dir)
    assert man.status == "complete" and len(man.resumed_at) == 1
    assert json.loads((run_dir / "manifest.json").read_text())["run_id"] == "run"
    done = cli("run", "--resume", str(run_dir), "--dry-run")
    assert "nothing left to run" in done.stdout and "\n# rep " not in done.stdout, done.stdout
    again = cli("run", "--resume", str(run_dir), "--quiet")  # for real: says so, and is no resume
    assert again.returncode == 0 and "nothing was run" in again.stderr + again.stdout, again.stderr
    assert len(load_manifest(run_dir).resumed_at) == 1 and len(load_samples(run_dir)) == 4
    # every whole log is a recorded sample's, under a number of its own; the cut one is marked
    logs = sorted(run_dir.glob("raw/*.stderr"))
    assert len(logs) == 4 and len({p.name[:4] for p in logs}) == 4
    assert len(list(run_dir.glob("raw/*.partial"))) in (0, 2)  # 0: the signal fell between samples
    parsed = cli("parse", *map(str, logs))
    assert parsed.returncode == 0, parsed.stderr

    # as if made elsewhere: --resume refuses; --force continues, and the manifest says so
    data = json.loads((run_dir / "manifest.json").read_text())
    data["env"]["hostname"] = "elsewhere"
    (run_dir / "manifest.json").write_text(json.dumps(data))
    assert_one_line_error(cli("run", "--resume", str(run_dir)), "made on another machine (hostname elsewhere")
    forced = cli(
        "run", "--resume", str(run_dir), "--force", "--quiet", env={"SPECBENCH_RESULTS": str(tmp_path)}
    )
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert load_manifest(run_dir).other_machines == [f"hostname elsewhere, here {platform.node()}"]
    assert len(load_samples(run_dir)) == 4  # nothing was left to run


@pytest.mark.parametrize("terminal", [True, False], ids=["tty", "plain"])
def test_progress_view_bar_on_a_terminal_lines_otherwise(tmp_path, monkeypatch, terminal):
    """The CLI's rendering of runner progress, driven by the real runner over stand-in binaries."""
    import io

    from rich.console import Console

    from specbench.builder.toolkit import detect_backend
    from specbench.cli import common, progress
    from specbench.execute.runner import execute
    from specbench.machine.envinfo import collect
    from tests.helpers.fakeruns import inv, manifest, process

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=terminal, width=150)
    monkeypatch.setattr(progress, "err_console", console)
    monkeypatch.setattr(common, "err_console", console)  # say(..., err=True) prints the plain lines
    view = progress.ProgressView(quiet=False)
    plan = [
        inv("nodraft", warmup=True),
        inv("plain", role="baseline", prompt_id="a"),  # writes a token at a time: a generation span
        inv("nodraft", prompt_id="b"),
        inv("silent", prompt_id="c"),
    ]
    execute(
        process(plan), tmp_path / "run", manifest(tmp_path / "run", collect(detect_backend)), progress=view
    )
    view.stop()
    text = buf.getvalue()
    assert (
        "[4/4] rep 1 speculative pair draft draft_max=8" in text
        and "c: FAILED: no statistics in output" in text
    )
    assert "b: INVALID: speculation never engaged (n_drafted = 0)" in text
    if terminal:
        assert "ETA" in text and "last 32.0 t/s" in text  # the bar, with the last measured speed
    else:
        assert re.search(r"\[2/4\] rep 1 baseline target ngl=0 a: \d+\.\d\d t/s\n", text), text
        assert "[1/4] warmup 1 speculative pair" in text
        assert "\x1b[" not in text  # no terminal control codes in logs

    quiet = io.StringIO()
    monkeypatch.setattr(progress, "err_console", Console(file=quiet, force_terminal=terminal))
    execute(
        process(plan),
        tmp_path / "run2",
        manifest(tmp_path / "run2", collect(detect_backend)),
        progress=progress.ProgressView(True),
    )
    assert quiet.getvalue() == ""


CONFIGS_DIR = Path(__file__).parents[2] / "configs"
SHIPPED = sorted([*CONFIGS_DIR.glob("*.yaml"), *(CONFIGS_DIR / "seeds").glob("*.yaml")])
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"}


# In one child with the Hub offline from its start (huggingface_hub reads HF_HUB_OFFLINE when it is
# imported), each config's `specbench run --dry-run` through the CLI's main: 15 children cost 38 s.
_DRY_RUNS = """
import json, sys
from tests.helpers.cli import invoke
out = {}
for c in sys.argv[2:]:
    r = invoke("run", c, "--dry-run")
    out[c] = [r.returncode, r.stdout, r.stderr]
open(sys.argv[1], "w").write(json.dumps(out))
"""


@pytest.fixture(scope="module")
def shipped_dry_runs(tmp_path_factory, llama_build) -> tuple[dict, Path]:
    tmp = tmp_path_factory.mktemp("shipped")
    env = {**os.environ, **OFFLINE, "SPECBENCH_RESULTS": str(tmp / "r")}
    done = subprocess.run(
        [sys.executable, "-c", _DRY_RUNS, str(tmp / "out.json"), *map(str, SHIPPED)], env=env,
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp / "out.json").read_text()), tmp / "r"


@pytest.mark.parametrize("config", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_config_dry_runs(shipped_dry_runs, config):
    """The GPU configs (Hugging Face sources, CUDA/Metal builds) can't run here, but their --dry-run must
    resolve, plan and print every command line; with the Hub unreachable, models show as not cached."""
    runs, results = shipped_dry_runs
    code, stdout, stderr = runs[str(config)]
    result = subprocess.CompletedProcess([], code, stdout, stderr)
    assert result.returncode == 0, result.stderr
    commands = [line for line in result.stdout.splitlines() if line and not line.startswith("#")]
    loaded = load_config(config)
    assert len(commands) >= loaded.repetitions * len(loaded.prompt_list())
    assert any("-md " in c or "--spec-type" in c for c in commands)
    assert not results.exists()


def test_a_real_run_says_its_plan_notes_before_the_first_sample(one_cell_run):
    """A key no cell uses is named by the run itself, not only by its dry run (the shared run sets
    precision and sweep.ngram_size_n, which its one draft cell with fixed repetitions does not use)."""
    result = one_cell_run.result
    assert result.returncode == 0, result.stderr
    err = " ".join(result.stderr.split())
    assert "note: sweep.ngram_size_n is for n-gram methods" in err and "note: precision is for" in err
    assert err.index("note: sweep.ngram_size_n") < err.index("[1/")  # before the first sample


def test_a_runs_closing_words_say_each_thing_once_warnings_first(tmp_path, capsys):
    """Issue 58: the quickstart ended with one drift said three times (a note, a WARNING and the
    report's note) among six lines, a busy machine with twelve. On a recorded run whose machine was
    busy (another benchmark), whose speed moved within and between pairs and whose pairs were measured
    again: each thing once, every warning before every note, at most SHOWN lines and a pointer."""
    import shutil

    from specbench.analysis.caveats import SHOWN
    from specbench.analysis.report import build_report
    from specbench.cli.run import _print_summary
    from specbench.execute.benchmark import RunSummary
    from specbench.machine.contention import rerun_note
    from specbench.machine.noise import NoiseRecord

    run = tmp_path / "busy"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "runs" / "quickstart-3rep", run)
    manifest = json.loads((run / "manifest.json").read_text())
    drift = "machine speed moved by -21% during the run (from 6.2 to 4.9 t/s), up to 9% within a pair (30 s)"
    between = "machine speed moved by +8% during the run (from 4.9 to 5.3 t/s), between pairs: at most 1%"
    rerun = rerun_note(2, "its process got 40% of its CPU")
    manifest["noise"].update(
        notes=[rerun], speed={"moved": -0.21, "precision": 0.03, "warnings": [drift], "notes": [between]}
    )
    (run / "manifest.json").write_text(json.dumps(manifest))
    lines = (run / "samples.jsonl").read_text().splitlines()
    (run / "samples.jsonl").write_text(
        "".join(
            json.dumps({**json.loads(x), "reruns": 1 if i < 2 else 0}) + "\n" for i, x in enumerate(lines)
        )
    )
    busy = manifest["noise"]["busy"]
    summary = RunSummary(run_dir=run, run_id=manifest["run_id"], n_samples=len(lines), n_new=len(lines),
                         n_failed=0, n_invalid=0, noise=NoiseRecord.model_validate(manifest["noise"]),
                         sentinel="speed sentinel: 5 readings")  # fmt: skip
    _print_summary(summary, build_report([run]), [])
    said = [x for x in capsys.readouterr().err.splitlines() if x.startswith(("WARNING: ", "note: "))]
    for fact in (drift, between, busy[0], busy[1], "re-run", "come from pairs measured again"):
        assert sum(fact in x for x in said) <= 1, (fact, said)
    for fact in (drift, busy[0], busy[1]):  # the warnings are never the ones left out
        assert sum(fact in x for x in said) == 1, (fact, said)
    kinds = [x.split(":")[0] for x in said]
    assert kinds == sorted(kinds, key=lambda k: k != "WARNING"), said  # warnings before notes
    assert len(said) <= SHOWN + 1 and "specbench report" in said[-1], said


def test_the_closing_pointer_counts_what_it_left_out_as_a_reader_says_it():
    """A real run on this machine ended with 'note: 1 more notes: `specbench report ...`'."""
    from specbench.cli.run import _left_out

    assert _left_out(1, 0) == "1 more note" and _left_out(3, 0) == "3 more notes"
    assert _left_out(2, 1) == "2 more (1 warning)" and _left_out(4, 2) == "4 more (2 warnings)"

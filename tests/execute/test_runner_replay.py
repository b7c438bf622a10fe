"""The runner loop over replayed real outcomes (tests/fixtures/replay.py): `specbench run` as a
user runs it, every invocation a recorded llama.cpp run of the pinned build with the timing the
rule needs, in milliseconds. What the real binaries alone can show stays in the real tier
(tests/cli/test_run.py::test_one_cell_end_to_end and the other `slow` tests)."""

from __future__ import annotations

import json
import platform
import random
import shlex
import signal
from pathlib import Path

import pytest

from specbench.base.errors import Terminated
from specbench.results.cell import baseline_of
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.fixtures.replay import Take
from tests.helpers.cli import invoke

CI = Path(__file__).resolve().parents[2] / "configs" / "ci.yaml"
QUICK = ["--set", "pairing=sequential", "--set", "sentinel=false"]


def run(tmp_path: Path, *args: str):
    return invoke("run", CI, "--out", tmp_path / "run", *QUICK, *args, cwd=tmp_path)


def test_every_sample_is_judged_from_its_raw_logs_in_the_sweeps_order(tmp_path, replay):
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    samples = load_samples(tmp_path / "run")
    assert len(samples) == 18 and all(
        s.status == "ok" and s.valid for s in samples
    )  # 3 reps x 2 prompts x 3 roles
    assert [s.role for s in samples[:3]] == ["baseline", "speculative", "draft"]  # a baseline before its cell
    assert [(s.repetition, s.prompt_id) for s in samples[::3]] == [
        (rep, p) for rep in range(3) for p in ("code-02", "extr-05")
    ]
    spec = [s for s in samples if s.role == "speculative"]
    assert {round(s.tps, 2) for s in spec} == {43.31} and all(s.outputs_match for s in spec)
    assert {round(s.tps, 1) for s in samples if s.role == "baseline"} == {28.2}
    for s in samples:  # each judged from the raw logs written where the process writes them
        assert (tmp_path / "run" / s.stderr_path).is_file() and (tmp_path / "run" / s.stdout_path).is_file()
    assert len(replay.log) == 18 + 3  # and one warmup per model or setting, not recorded
    assert load_manifest(tmp_path / "run").status == "complete"


def test_a_crash_at_sample_7_is_recorded_and_the_run_goes_on(tmp_path, replay):
    """llama.cpp killed by SIGSEGV at the 7th sample: that sample is failed with the reason, the
    rest are measured."""
    replay.script = lambda inv, n: Take(signal="SIGSEGV") if n == 3 + 6 else Take()  # 3 warmups first
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    samples = load_samples(tmp_path / "run")
    assert [s.status for s in samples] == ["ok"] * 6 + ["failed"] + ["ok"] * 11
    assert "SIGSEGV" in samples[6].invalid_reason


def test_specbench_stopped_at_sample_7_keeps_6_and_the_resume_runs_only_the_rest(tmp_path, replay):
    """Ctrl-C as the 7th sample starts (its run in flight): 6 kept, the resume command said; a
    resume with another config is refused, a dry one lists what is left, the real one runs the
    warmups and the 12 left (nothing twice) and is recorded; then nothing is left, and a folder made
    on another machine is refused unless --force, which the manifest records."""
    replay.script = lambda inv, n: Take(stop=KeyboardInterrupt()) if n == 3 + 6 else Take()
    run_dir = tmp_path / "run"
    r = run(tmp_path)
    assert r.returncode == 130 and "Traceback" not in r.stderr, r.stderr
    assert "6 samples kept" in r.stderr and f"resume with: specbench run --resume {run_dir}" in r.stderr
    first = load_samples(run_dir)
    assert len(first) == 6 and load_manifest(run_dir).status == "interrupted"
    other = invoke("run", CI, "--resume", run_dir, *QUICK, "--set", "repetitions=4", cwd=tmp_path)
    assert other.returncode != 0 and "Traceback" not in other.stderr
    assert "was run with a different config (repetitions differ)" in other.stderr
    dry = invoke("run", "--resume", run_dir, "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0 and "6 of 18 planned samples are recorded already" in dry.stdout, dry.stderr
    assert dry.stdout.count("\n# rep ") == 12 and len(load_samples(run_dir)) == 6
    replay.log.clear()
    replay.script = lambda inv, n: Take()
    r = invoke("run", "--resume", run_dir, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    samples = load_samples(run_dir)
    assert len(samples) == 18 and len({s.sample_key() for s in samples}) == 18
    assert samples[:6] == first  # the kept samples stay as they were
    assert len(replay.log) == 3 + 12  # the warmups again, then only what was missing
    assert [i.sample_key() for i in replay.measured()] == [s.sample_key() for s in samples[6:]]
    manifest = load_manifest(run_dir)
    assert manifest.status == "complete" and len(manifest.resumed_at) == 1
    logs = sorted(run_dir.glob("raw/*.stderr"))  # every log under a number of its own
    assert len({p.name[:4] for p in logs}) == len(logs) == 3 + 6 + 3 + 12
    assert invoke("parse", *logs[:4], cwd=tmp_path).returncode == 0
    done = invoke("run", "--resume", run_dir, "--dry-run", cwd=tmp_path)
    assert "nothing left to run" in done.stdout and "\n# rep " not in done.stdout
    again = invoke("run", "--resume", run_dir, "--quiet", cwd=tmp_path)
    assert again.returncode == 0 and "nothing was run" in again.stderr + again.stdout, again.stderr
    assert len(load_manifest(run_dir).resumed_at) == 1 and len(replay.measured()) == 12
    data = json.loads((run_dir / "manifest.json").read_text())
    data["env"]["hostname"] = "elsewhere"
    (run_dir / "manifest.json").write_text(json.dumps(data))
    refused = invoke("run", "--resume", run_dir, cwd=tmp_path)
    assert refused.returncode != 0 and "made on another machine (hostname elsewhere" in refused.stderr
    assert invoke("run", "--resume", run_dir, "--force", "--quiet", cwd=tmp_path).returncode == 0
    assert load_manifest(run_dir).other_machines == [f"hostname elsewhere, here {platform.node()}"]


def test_a_run_that_measured_nothing_fails_and_still_prints_its_table(tmp_path, replay):
    replay.script = lambda inv, n: Take(timed_out=True)
    r = run(tmp_path, "--set", "warmup=0", "--set", "repetitions=1")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert (
        last.startswith("error: 1 of 1 cells have no valid sample (smol draft_max 8)")
        and "samples.jsonl" in last
    )
    assert {s.status for s in load_samples(tmp_path / "run")} == {"timeout"}
    assert "0/2 !" in r.stdout  # the table is still printed


def test_auto_repetitions_stop_at_the_maximum_and_say_so(tmp_path, replay):
    """A precision no noise meets (0.0001, 1% noise a sample): every cell runs max_repetitions, each
    round baseline first, and the table marks it; a decode shorter than min_decode_s is named."""
    rng = random.Random(3)
    replay.script = lambda inv, n: Take(slowdown=1 + rng.gauss(0, 0.01))
    r = run(tmp_path, "--set", "prompts.ids=[code-02]", "--set", "repetitions=auto",
            "--set", "precision=0.0001", "--set", "min_repetitions=2", "--set", "max_repetitions=3",
            "--set", "min_decode_s=600")  # fmt: skip
    assert r.returncode == 0, r.stderr
    samples = load_samples(tmp_path / "run")
    assert sorted((s.role, s.repetition) for s in samples) == [
        (role, rep) for role in ("baseline", "draft", "speculative") for rep in range(3)
    ]
    order = [(s.repetition, s.role) for s in samples]
    assert order.index((2, "baseline")) < order.index((2, "speculative"))
    manifest = load_manifest(tmp_path / "run")
    assert manifest.status == "complete" and manifest.n_samples_planned == 9
    assert "short decode window" in r.stderr and "n_predict" in r.stderr
    assert "†" in r.stdout


def test_llama_arg_variables_are_recorded_named_and_compared(tmp_path, replay):
    sets = ["--set", "repetitions=2", "--set", "warmup=0", "--set", "prompts.ids=[code-02]"]
    with_fa, without = tmp_path / "with-fa", tmp_path / "without"
    env = {
        "LLAMA_ARG_FLASH_ATTN": "on",
        "LLAMA_ARG_API_KEY": "sekrit-123",
        "HF_TOKEN": "hf_sekrit",
        "COLUMNS": "200",
    }
    first = invoke("run", CI, "--out", with_fa, *QUICK, *sets, env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "environment: LLAMA_ARG_FLASH_ATTN=on reach every llama.cpp binary" in first.stderr
    speed = load_manifest(with_fa).noise.speed  # `sentinel: false`: no reading, and said
    assert speed.off and not speed.readings and "speed sentinel off (sentinel: false)" in first.stderr
    assert load_manifest(with_fa).env.variables.get("LLAMA_ARG_FLASH_ATTN") == "on"
    text = (with_fa / "manifest.json").read_text()
    assert "sekrit" not in text and "LLAMA_ARG_API_KEY" not in text  # secrets are never recorded
    second = invoke("run", CI, "--out", without, *QUICK, *sets, env={"COLUMNS": "200"}, cwd=tmp_path)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "LLAMA_ARG_FLASH_ATTN" not in load_manifest(without).env.variables
    compared = invoke("compare", without, with_fa, env={"COLUMNS": "200"}, cwd=tmp_path)
    assert "WARNING: environment LLAMA_ARG_FLASH_ATTN: unset -> on" in compared.stdout + compared.stderr


def test_a_sample_whose_process_was_starved_is_measured_again_with_its_pair(tmp_path, replay):
    """Its process got 40% of its threads' CPU (under contention.MIN_CPU_SHARE): measured again,
    counted in the sample and the manifest; a second starved try is measured a third time."""
    replay.script = lambda inv, n: Take(cpu_share=0.4, slowdown=5.0) if n in (3 + 4, 3 + 5) else Take()
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    samples = load_samples(tmp_path / "run")
    assert len(samples) == 18
    assert [s.reruns for s in samples][:6] == [0, 0, 0, 0, 2, 0]
    assert round(samples[4].tps, 2) == 43.31  # the last try is the one kept: the unstarved one
    assert len(replay.log) == 18 + 3 + 2
    notes = load_manifest(tmp_path / "run").noise.notes
    assert any("measured again" in n or "re-run" in n or "rerun" in n for n in notes), notes
    raws = sorted(p.name for p in (tmp_path / "run" / "raw").iterdir())
    assert sum(".rerun" in name for name in raws) == 4  # the two starved tries' logs kept, marked


def test_a_failed_warmup_drops_its_cells_unrun_and_the_others_are_measured(tmp_path, replay):
    replay.script = lambda inv, n: Take(exit_code=1) if inv.warmup and inv.role == "speculative" else Take()
    r = run(tmp_path)
    assert r.returncode == 1 and "1 of 1 cells have no valid sample (smol draft_max 8)" in r.stderr
    samples = load_samples(tmp_path / "run")
    spec = [s for s in samples if s.role == "speculative"]
    assert len(spec) == 6 and all(s.status == "failed" for s in spec)
    assert all(s.invalid_reason.startswith("not run: its warmup failed") for s in spec)
    assert all(s.status == "ok" for s in samples if s.role != "speculative")
    assert not any(i.role == "speculative" for i in replay.measured())  # dropped: never run
    assert "dropped 6 sample(s)" in r.stderr


def test_every_warmup_failing_stops_the_run_before_measuring(tmp_path, replay):
    replay.script = lambda inv, n: Take(exit_code=1)
    r = run(tmp_path)
    assert r.returncode != 0 and "every cell's warmup failed" in r.stderr
    assert replay.measured() == []


def test_the_sentinel_reads_at_start_between_samples_and_at_end_and_warns_of_a_move(tmp_path, replay):
    """The reference runs at the start, at the end, and between samples once its share of the time
    (speed.SHARE) allows: a reading of ~2.3 virtual seconds, every ~92 s (a sample takes
    ~2.3); the machine 30% slower from the middle on is a warning."""
    replay.sentinel_script = lambda inv, n: Take(slowdown=1.3 if n >= 1 else 1.0)
    r = invoke("run", CI, "--out", tmp_path / "run", "--set", "pairing=sequential", "--set", "repetitions=12",
               cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    speed = load_manifest(tmp_path / "run").noise.speed
    phases = [x.phase for x in speed.readings]
    assert phases[0] == "before" and phases[-1] == "after" and "during" in phases
    assert len(replay.sentinel_log) == len(phases)
    assert speed.warnings, speed  # 1.3x slower: far beyond the run's precision
    quiet = tmp_path / "quiet"
    replay.sentinel_script = lambda inv, n: Take()
    r = invoke(
        "run", CI, "--out", quiet, "--set", "pairing=sequential", "--set", "repetitions=2", cwd=tmp_path
    )
    assert r.returncode == 0 and not load_manifest(quiet).noise.speed.warnings


def test_the_samples_file_is_strict_json(tmp_path, replay):
    assert run(tmp_path).returncode == 0
    for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines():
        json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_keeps_samples_and_the_printed_resume_command_works(tmp_path, replay, sig):
    """SIGTERM/SIGHUP (errors.Terminated, raised where Ctrl-C would be: tests/base/test_interrupts.py
    sends the real signals) as the 4th sample starts: exit 128 + the signal, the manifest says which;
    the printed resume command, run as printed (a space in the folder: quoted), completes the run, and
    its closing table is `specbench report`'s, row for row."""
    run_dir = tmp_path / "run dir"
    replay.script = lambda inv, n: Take(stop=Terminated(sig.name, sig)) if n == 3 + 3 else Take()
    r = invoke("run", CI, "--out", run_dir, *QUICK, "--set", "repetitions=2", cwd=tmp_path)
    assert r.returncode == 128 + sig and "Traceback" not in r.stderr, r.stderr
    assert f"interrupted ({sig.name})" in r.stderr
    man = load_manifest(run_dir)
    assert man.status == "interrupted" and man.status_reason == sig.name and len(load_samples(run_dir)) == 3
    printed = next(line for line in r.stderr.splitlines() if line.startswith("resume with: "))
    argv = shlex.split(printed.removeprefix("resume with: "))
    assert argv == ["specbench", "run", "--resume", str(run_dir)]
    replay.script = lambda inv, n: Take()
    resumed = invoke(*argv[1:], env={"COLUMNS": "200"}, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert len(load_samples(run_dir)) == 12 and load_manifest(run_dir).status == "complete"
    report = invoke("report", run_dir, env={"COLUMNS": "200"}, cwd=tmp_path)
    run_rows = [line for line in resumed.stdout.splitlines() if "smol" in line]  # the table's rows
    assert run_rows and run_rows == [line for line in report.stdout.splitlines() if line.startswith("│ smol")]


def test_two_builds_interleave_back_to_back_each_judged_against_its_own_baseline(tmp_path, replay):
    """Two labels of one build (an A/A): every baseline, cell and draft-alone run twice in a row, a
    then b in repetition 0, b then a in 1; one model load a sample, two more a re-run pair; a report
    row per build; the paired gate over the run pairs both metrics."""
    replay.script = lambda inv, n: Take(cpu_share=0.4) if n == 1 else Take()  # the 2nd sample starved once
    builds = "llama_cpp=[{label: a, backend: cpu}, {label: b, backend: cpu}]"
    r = run(tmp_path, "--set", builds, "--set", "repetitions=2", "--set", "warmup=0",
            "--set", "prompts.ids=[code-02]")  # fmt: skip
    assert r.returncode == 0, r.stderr
    samples = load_samples(tmp_path / "run")
    assert len(samples) == 12 and {s.build for s in samples} == {"a", "b"}
    for first, second in zip(samples[::2], samples[1::2], strict=True):
        assert (first.role, first.repetition) == (second.role, second.repetition)
        assert (first.build, second.build) == (("a", "b") if first.repetition == 0 else ("b", "a"))
    baselines = {(baseline_of(s), s.repetition) for s in samples if s.role == "baseline"}
    assert all((baseline_of(s), s.repetition) in baselines for s in samples if s.role == "speculative")
    man = load_manifest(tmp_path / "run")
    assert set(man.builds) == {"a", "b"} and man.noise.reruns == 1 and man.model_loads == 12 + 2
    rows = json.loads(invoke("report", tmp_path / "run", "--format", "json", cwd=tmp_path).stdout)
    assert sorted(r["build"] for r in rows) == ["a", "b"]
    gate = invoke("compare", tmp_path / "run", "--format", "json", cwd=tmp_path)
    decisions = json.loads(gate.stdout)["decisions"]
    assert {d["n_pairs"] for d in decisions if d["metric"] in ("baseline_tps", "spec_tps")} == {2}


def _build_with_workaround(monkeypatch) -> None:
    """The replayed build as its self-test leaves it on a CPU where Q4_1 crashes as built (issue 31)."""
    from specbench.builder.buildinfo import SelfTest, Workaround
    from tests.fixtures import replay as replayed

    recorded = replayed.recorded_build

    def build(label, ref, bin_dir):
        info = recorded(label, ref, bin_dir)
        for b in info.binaries.values():  # the pinned build's spelling (recorded before it was probed)
            if b.role != "bench":
                b.flags = b.flags.model_copy(update={"no_repack": "--no-repack"})
        wa = Workaround(name="repack-off", flag="--no-repack", reason="the self-test crashed on Q4_1")
        info.selftest = SelfTest(
            fingerprint="replay", machine="replay", checked_at="2026-11-26", workaround=wa
        )
        return info

    monkeypatch.setattr(replayed, "recorded_build", build)


Q4_LOOKUP = ["--set", "pairs={ng: {target: smol_q4, method: ngram-simple}}", "--set", "repetitions=1"]


def _crash_as_built(inv, n) -> Take:
    """SIGSEGV on the Q4_1 model unless --no-repack, as the AMX repack crash does."""
    return Take() if "--no-repack" in inv.argv else Take(signal="SIGSEGV")


def test_every_invocation_carries_the_workaround_and_the_run_says_so(tmp_path, replay, monkeypatch):
    _build_with_workaround(monkeypatch)
    replay.script = _crash_as_built
    r = run(tmp_path, *Q4_LOOKUP)
    assert r.returncode == 0, r.stderr
    assert "workaround: this build runs with --no-repack" in r.stdout + r.stderr
    assert replay.log and all(inv.argv[1] == "--no-repack" for inv in replay.log)  # warmups too
    samples = load_samples(tmp_path / "run")
    assert samples and all(s.cmd[1] == "--no-repack" and s.status == "ok" for s in samples)
    wa = load_manifest(tmp_path / "run").build.selftest.workaround
    assert wa.flag == "--no-repack" and "Q4_1" in wa.reason
    report = json.loads(invoke("report", tmp_path / "run", "--format", "json", cwd=tmp_path).stdout)
    assert report and all("workaround repack-off: --no-repack" in row["warnings"] for row in report)


def test_no_workarounds_runs_as_built_and_the_crash_stops_the_run(tmp_path, replay, monkeypatch):
    _build_with_workaround(monkeypatch)
    replay.script = _crash_as_built
    r = run(tmp_path, *Q4_LOOKUP, "--no-workarounds")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "every cell's warmup failed (killed by SIGSEGV" in r.stderr, r.stderr
    assert replay.log and not any("--no-repack" in inv.argv for inv in replay.log)
    man = load_manifest(tmp_path / "run")
    assert man.build.workarounds_off and man.status == "failed"
    assert all(
        s.invalid_reason.startswith("not run: its warmup failed") for s in load_samples(tmp_path / "run")
    )

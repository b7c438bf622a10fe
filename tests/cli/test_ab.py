"""`specbench compare RUN` on one multi-build run, and the one-line errors of `ab` and `bisect`,
as a user runs them. The real two-build runs are in tests/cli/test_ab_real.py."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from specbench.execute.benchmark import RunSummary
from specbench.gate.decision import Status
from specbench.results.records import Sample
from tests.helpers.cli import specbench

DATA = Path(__file__).resolve().parents[1] / "data" / "runs" / "quick-cpu"
needs_build_field = pytest.mark.skipif(
    "build" not in Sample.model_fields, reason="samples carry `build` once the cell declaration has it"
)


def multi_build_run(tmp_path: Path, builds=("base", "head"), slow: dict | None = None, reps: int = 4) -> Path:
    """quick-cpu's manifest with samples of several builds, interleaved (ABBA), 1% noise; ``slow``
    scales a build's baseline t/s."""
    run = tmp_path / "multi"
    run.mkdir()
    shutil.copy(DATA / "manifest.json", run / "manifest.json")
    template = [json.loads(line) for line in (DATA / "samples.jsonl").read_text().splitlines()]
    template = [t for t in template if t["repetition"] == 0 and t["role"] in ("baseline", "speculative")]
    rng = random.Random(7)
    lines = []
    for rep in range(reps):
        for t in template:
            for b in builds if rep % 2 == 0 else builds[::-1]:
                s = dict(t, build=b, repetition=rep)
                scale = (slow or {}).get(b, 1.0) if t["role"] == "baseline" else 1.0
                s["tps"] = t["tps"] * scale * math.exp(rng.gauss(0, 0.01))
                lines.append(json.dumps(s))
    (run / "samples.jsonl").write_text("\n".join(lines) + "\n")
    return run


def one_line_error(r: subprocess.CompletedProcess, *words: str) -> str:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    for w in words:
        assert w in lines[0]
    return lines[0]


@needs_build_field
def test_compare_one_run_gives_the_paired_gate(tmp_path):
    run = multi_build_run(tmp_path, slow={"head": 0.9})
    r = specbench("compare", run, "--format", "json", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["exit_code"] == 1 and data["threshold"] == 0.05
    keys = {"cell", "metric", "ratio", "ci_low", "ci_high", "p_value", "n_pairs", "decision"}
    assert all(keys <= set(d) for d in data["decisions"])
    base = [d for d in data["decisions"] if d["metric"] == "baseline_tps"]
    assert [d["decision"] for d in base] == ["fail"] and base[0]["n_pairs"] == 8
    assert base[0]["ratio"] == pytest.approx(0.9, abs=0.02)
    # the other way round it is an improvement; the table names the builds and the detectable change
    summary = tmp_path / "summary.md"
    swapped = ["--base", "head", "--head", "base", "--metric", "baseline_tps", "--metric", "spec_tps"]
    r = specbench("compare", run, *swapped, cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "improved" in r.stdout and "head (base) vs base (head)" in r.stdout and "detectable" in r.stdout
    assert "| decision | metric |" in summary.read_text()
    # labels that are the words themselves (as `specbench ab` names them) are said once
    r = specbench("compare", run, "--metric", "baseline_tps", cwd=tmp_path)
    assert r.returncode == 1 and "(head vs base, threshold 5.0%)" in r.stdout, r.stdout


@needs_build_field
def test_three_builds_need_base_and_head(tmp_path):
    run = multi_build_run(tmp_path, builds=("a", "b", "c"))
    one_line_error(specbench("compare", run, cwd=tmp_path), "3 builds", "--base LABEL --head LABEL")
    one_line_error(specbench("compare", run, "--base", "a", "--head", "x", cwd=tmp_path), "--head x")
    r = specbench("compare", run, "--base", "a", "--head", "c", "--metric", "baseline_tps", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_compare_one_run_with_one_build_or_a_name(tmp_path):
    one_line_error(specbench("compare", DATA, cwd=tmp_path), "needs a run of two")
    one_line_error(specbench("compare", "no-such-baseline", cwd=tmp_path), "two builds")


def test_two_run_compare_says_what_unpaired_runs_cannot_see(tmp_path):
    r = specbench("compare", DATA, DATA, cwd=tmp_path)
    assert "cannot see a change smaller than the drift" in r.stdout


def test_ab_and_bisect_bad_input(tmp_path):
    cfg = Path(__file__).resolve().parents[2] / "configs" / "ci.yaml"
    one_line_error(
        specbench("ab", cfg, "--base", "/no/such@v1", "--head", "@HEAD", cwd=tmp_path), "not a folder"
    )
    one_line_error(
        specbench("ab", cfg, "--base", f"{tmp_path}@", "--head", "@x", cwd=tmp_path), "nothing after"
    )
    one_line_error(
        specbench("ab", cfg, "--base", "@a", "--head", "@b", "--metric", "nope", cwd=tmp_path),
        "--metric nope",
    )
    long_out = str(tmp_path / ("y" * 260))  # bad input (2), never the gate's regression code (1)
    one_line_error(specbench("ab", cfg, "--base", "@a", "--head", "@b", "--out", long_out, cwd=tmp_path),
                   "--out", "at most 255 bytes")  # fmt: skip
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env={"PATH": "/usr/bin:/bin", **env})
    bisect = ["bisect", cfg, "--source", repo, "--metric", "baseline_tps"]
    one_line_error(specbench(*bisect, "--good", "HEAD", "--bad", "HEAD", cwd=tmp_path), "same commit")
    one_line_error(specbench(*bisect, "--good", "HEAD", "--bad", "HEAD", "--out", long_out, cwd=tmp_path),
                   "--out", "at most 255 bytes")  # fmt: skip
    one_line_error(
        specbench(*bisect, "--good", "HEAD", "--bad", "v9", cwd=tmp_path), "--bad v9: no such commit"
    )
    one_line_error(
        specbench("bisect", cfg, "--source", tmp_path / "nope", "--good", "a", "--bad", "b", cwd=tmp_path),
        "not a folder",
    )
    for value, words in (("0", "more than 0"), ("-5", "more than 0"), ("-1m", "more than 0"),
                         ("soon", "not a number"), ("nan", "more than 0"), ("", "not a number")):  # fmt: skip
        for cmd in (
            ["ab", cfg, "--base", "@a", "--head", "@b"],
            [*bisect, "--good", "HEAD", "--bad", "HEAD"],
        ):
            one_line_error(specbench(*cmd, "--budget", value, cwd=tmp_path), "--budget", value, words)
    assert not (tmp_path / "results").exists()


@needs_build_field
def _stand_in_history(tmp_path: Path, monkeypatch, measured: list) -> list[str]:
    """A 5-commit llama.cpp-shaped repo, and ``ab``'s runs replaced by constructed two-build run
    folders in which a build at commit 2 or later is 10% slower (base and head alike)."""
    import specbench.cli.ab as ab_cli

    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"PATH": "/usr/bin:/bin", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    (repo / "CMakeLists.txt").write_text("project(llama)\n")  # llama.cpp's shape (bisect checks it)
    (repo / "llama.h").write_text("\n")
    shas = []
    for i in range(5):
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", f"c{i}"], cwd=repo, check=True, env=env)
        shas.append(subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, env=env, capture_output=True,
                                   text=True).stdout.strip())  # fmt: skip

    def speed(ref):
        return 0.9 if ref and shas.index(ref) >= 2 else 1.0

    def fake_run_builds(
        config,
        sets,
        specs,
        run_dir,
        quiet,
        metrics,
        threshold,
        resume_hint=None,
        budget_s=None,
        open_=frozenset({Status.TOO_NOISY}),
        typed=None,
    ):
        measured.append((specs[0][2], specs[1][2]))
        assert (Status.PASS in open_) == (specs[0][2] == shas[-1])  # against bad: a pass wants more rounds
        (run_dir.parent / "tmp-make").mkdir(parents=True)
        made = multi_build_run(
            run_dir.parent / "tmp-make", slow={"base": speed(specs[0][2]), "head": speed(specs[1][2])}
        )
        made.rename(run_dir)
        (run_dir.parent / "tmp-make").rmdir()
        return RunSummary(run_dir=run_dir, run_id=run_dir.name, n_samples=0, n_new=0, n_failed=0, n_invalid=0)

    monkeypatch.setattr(ab_cli, "run_builds", fake_run_builds)
    return [str(repo), *shas]


def test_ab_and_bisect_flow_over_stand_in_runs(tmp_path, monkeypatch):
    """The commands' flow (the runs replaced by constructed two-build run folders whose head is 10%
    slower from commit 2 on): ab's exit and table, bisect's steps, first bad commit and --resume."""
    from typer.testing import CliRunner

    from specbench.cli import app

    measured: list = []
    repo, *shas = _stand_in_history(tmp_path, monkeypatch, measured)
    runner = CliRunner()
    cfg = str(Path(__file__).resolve().parents[2] / "configs" / "ci.yaml")
    r = runner.invoke(app, ["ab", cfg, "--base", f"{repo}@{shas[0]}", "--head", f"{repo}@{shas[3]}",
                            "--out", str(tmp_path / "ab"), "--metric", "baseline_tps"])  # fmt: skip
    assert r.exit_code == 1 and "FAIL" in r.output, r.output
    args = ["bisect", cfg, "--source", repo, "--good", shas[0], "--bad", shas[4],
            "--metric", "baseline_tps", "--out", str(tmp_path / "bis")]  # fmt: skip
    measured.clear()
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert f"first bad commit: {shas[2]} c2" in r.output
    assert [ln.split()[2] for ln in r.output.splitlines() if ln.startswith("step ")] == [
        shas[i][:10] for i in (2, 1)
    ]
    assert measured == [(shas[0], shas[2]), (shas[0], shas[1])]  # decided against good: no run against bad
    measured.clear()
    r = runner.invoke(app, [*args, "--resume"])
    assert r.exit_code == 0 and measured == [] and f"first bad commit: {shas[2]}" in r.output
    r = runner.invoke(app, args)  # in process: the error is raised, main() would print it in one line
    assert "pass --resume to continue it" in str(r.exception)


def test_bisect_measures_an_undecided_step_against_bad_and_says_what_that_decided(tmp_path, monkeypatch):
    """At a threshold inside the stand-in runs' noise (1% a sample) a code-identical step cannot
    pass against good; 10% faster than bad, it is good, and the answer says how it was decided."""
    from typer.testing import CliRunner

    from specbench.cli import app

    measured: list = []
    repo, *shas = _stand_in_history(tmp_path, monkeypatch, measured)
    cfg = str(Path(__file__).resolve().parents[2] / "configs" / "ci.yaml")
    r = CliRunner().invoke(app, ["bisect", cfg, "--source", repo, "--good", shas[0], "--bad", shas[4],
                                 "--metric", "baseline_tps", "--threshold", "0.2%", "--out",
                                 str(tmp_path / "bis")])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert f"first bad commit: {shas[2]} c2" in r.output
    assert measured == [(shas[0], shas[2]), (shas[0], shas[1]), (shas[4], shas[1])]
    lines = r.output.splitlines()
    step2 = lines.index(next(ln for ln in lines if ln.startswith("step 2:")))
    assert "good (faster than --bad)" in lines[step2] and "cannot exclude a slowdown" in lines[step2]
    against = lines[step2 + 1]
    assert against.startswith(f"  against --bad {shas[4][:10]}: 1.1") and "faster: good" in against
    assert "note: step 2 was good by being faster than --bad" in " ".join(r.output.split())
    assert (tmp_path / "bis" / f"step-2-{shas[1][:10]}-vs-bad").is_dir()


@needs_build_field
def test_compare_one_run_honours_the_gate_options(tmp_path):
    """--allow-noisy, --allow-missing and --alpha mean in a multi-build run what they mean for two
    runs; --strict, which has nothing to act on there, says so instead of being ignored."""
    run = multi_build_run(tmp_path, reps=1)  # 4 pairs of baselines, 2 of speculative: t intervals
    narrow = ["--metric", "spec_tps", "--threshold", "0.5%"]
    r = specbench("compare", run, *narrow, cwd=tmp_path)
    assert r.returncode == 3 and "TOO NOISY: " in r.stdout, r.stdout + r.stderr
    assert "smallest detectable change up to ±" in r.stdout
    r = specbench("compare", run, *narrow, "--allow-noisy", cwd=tmp_path)
    assert r.returncode == 0 and "PASS (--allow-noisy)" in r.stdout, r.stdout + r.stderr
    r = specbench("compare", run, "--strict", "--alpha", "0.01", cwd=tmp_path)
    assert "--strict has no effect" in r.stderr and "98% intervals" in r.stdout, r.stdout + r.stderr
    one_line_error(specbench("compare", run, "--alpha", "5", cwd=tmp_path), "--alpha 5")


@needs_build_field
def test_compare_one_interrupted_run_is_nothing_to_compare(tmp_path):
    run = multi_build_run(tmp_path)
    lines = (run / "samples.jsonl").read_text().splitlines()
    (run / "samples.jsonl").write_text("\n".join(x for x in lines if '"speculative"' not in x) + "\n")
    r = specbench("compare", run, cwd=tmp_path)
    assert r.returncode == 4 and "NOTHING TO COMPARE" in r.stdout and "no speculative sample" in r.stdout
    (run / "samples.jsonl").write_text("")
    r = specbench("compare", run, "--format", "json", cwd=tmp_path)
    assert r.returncode == 4 and json.loads(r.stdout)["exit_code"] == 4, r.stdout + r.stderr


LLAMA_SHAPE = {"CMakeLists.txt": "project(llama)\n", "llama.h": "\n"}  # what bisect checks a source for


def _git_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir()
    env = {"PATH": "/usr/bin:/bin", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, env=env)
    for i, (name, text) in enumerate(files.items()):
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
        subprocess.run(["git", "add", "-f", name], cwd=path, check=True, env=env)
        subprocess.run(["git", "commit", "-qm", f"c{i}"], cwd=path, check=True, env=env)
    return path


def test_ab_bad_input_is_exit_2_never_the_gates_1_and_leaves_no_folder(tmp_path):
    """A typo, a missing ref or a tree that does not compile is bad input (2), not a regression (1),
    and a refused `ab` leaves no empty run folder behind."""
    cfg = Path(__file__).resolve().parents[2] / "configs" / "ci.yaml"
    repo = _git_repo(tmp_path / "repo", {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.14)\nproject(x CXX)\n"
                          "add_executable(llama-cli main.cpp)\n",
        "include/llama.h": "", "ggml/CMakeLists.txt": "", "main.cpp": "int main() { return 0 }\n",
    })  # fmt: skip
    home = {"SPECBENCH_HOME": str(tmp_path / "home")}  # the broken tree stays out of the user's cache
    out = tmp_path / "runs" / "ab"
    cases = [
        ((cfg, "--base", f"{repo}@nosuch", "--head", repo), "ref 'nosuch' is not a commit"),
        ((tmp_path / "none.yaml", "--base", repo, "--head", repo), "does not exist"),
        ((cfg, "--base", repo, "--head", repo, "--set", "bogus=1"), "bogus"),
        ((cfg, "--base", f"{repo}@HEAD", "--head", repo), "expected ';'"),  # the compiler's first error
    ]
    for args, words in cases:
        one_line_error(specbench("ab", *args, "-q", "--out", out, cwd=tmp_path, env=home), words)
        assert not (tmp_path / "runs").exists()


def test_bisect_checks_config_and_out_before_anything_even_for_one_commit(tmp_path):
    cfg = Path(__file__).resolve().parents[2] / "configs" / "ci.yaml"
    repo = _git_repo(tmp_path / "repo", {**LLAMA_SHAPE, "a.txt": "1", "b.txt": "2"})
    (tmp_path / "afile").write_text("x")
    one_commit = ["--source", repo, "--good", "HEAD~1", "--bad", "HEAD", "--metric", "baseline_tps"]
    for args, words in [
        ((tmp_path / "none.yaml", *one_commit), "does not exist"),
        ((cfg, *one_commit, "--set", "bogus=1"), "bogus"),
        ((cfg, *one_commit, "--out", tmp_path / "afile"), "is a file"),
    ]:
        one_line_error(specbench("bisect", *args, cwd=tmp_path), words)
    assert not (tmp_path / "results").exists()


def test_an_interrupted_bisect_says_resume_the_bisect_folder(tmp_path, monkeypatch):
    """The line after Ctrl-C names what continues the bisect (--resume --out OUT), not the step's
    run folder, which as --out would start a new bisect inside it."""
    from typer.testing import CliRunner

    from specbench.cli import app
    from specbench.execute import benchmark, preparation
    from specbench.execute.runner import RunInterrupted

    repo = _git_repo(tmp_path / "repo", {**LLAMA_SHAPE, "a.txt": "1", "b.txt": "2", "c.txt": "3"})

    def interrupted(prepared, run_dir, **kw):
        raise RunInterrupted(run_dir, 3, "SIGHUP", 129)

    from types import SimpleNamespace

    monkeypatch.setattr(
        preparation, "prepare", lambda cfg, **kw: SimpleNamespace(plan=SimpleNamespace(notes=[]))
    )
    monkeypatch.setattr(benchmark, "run_benchmark", interrupted)
    cfg = str(Path(__file__).resolve().parents[2] / "configs" / "ci.yaml")
    out = tmp_path / "bis"
    r = CliRunner().invoke(
        app,
        ["bisect", cfg, "--source", str(repo), "--good", "HEAD~2", "--bad", "HEAD", "--out", str(out), "-q"],
    )
    assert r.exit_code == 129, r.output
    assert f"the same command with --resume --out {out} continues it" in " ".join(r.output.split())

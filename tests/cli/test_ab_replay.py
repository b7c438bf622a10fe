"""`specbench ab` and `bisect` as a user runs them, their builds and llama.cpp runs replayed
(tests/fixtures/replay.py): the rounds the paired gate adds, the budget's pace, and a bisect of 8
commits, each with the timings its rule needs, in milliseconds. The real two-build runs stay in
the integration tier (tests/cli/test_decide_real.py) and `make test-perf`."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

from specbench.builder.buildinfo import BuildInfo
from specbench.gate.ab import decide, pairs
from specbench.gate.decision import Status
from specbench.results.samplelog import load_samples
from tests.fixtures.replay import Take
from tests.helpers.cli import invoke
from tests.helpers.sweeps import pairs as flag_values
from tests.helpers.trees import build_2025

CI = Path(__file__).resolve().parents[2] / "configs" / "ci.yaml"
ONE_PAIR_A_ROUND = ["--set", "prompts.ids=[code-02]", "--set", "repetitions=1", "--set", "warmup=0",
                    "--set", "sentinel=false", "--set", "pairing=sequential", "--metric", "baseline_tps",
                    "--quiet"]  # fmt: skip


def llama_shaped_repo(path: Path, commits: int) -> list[str]:
    """A git repository shaped as bisect checks a llama.cpp source (nothing builds it: the replay's
    builds are recorded), with ``commits`` commits; their shas, oldest first."""
    env = {"PATH": "/usr/bin:/bin", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    path.mkdir()
    (path / "CMakeLists.txt").write_text("project(llama)\n")
    (path / "llama.h").write_text("\n")
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, env=env)
    subprocess.run(["git", "add", "."], cwd=path, check=True, env=env)
    shas = []
    for i in range(commits):
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", f"c{i}"], cwd=path, check=True, env=env)
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, env=env, capture_output=True, text=True)
        shas.append(out.stdout.strip())
    return shas


def noisy(replay, speed: dict[str, float], noise: float, seed: int = 1):
    """Each run ``speed[ref]`` times slower than recorded (1.0 where not given), times a noise of
    ``noise`` (relative, Gaussian, seeded: the same every time)."""
    rng = random.Random(seed)

    def script(inv, n):
        ref = replay.refs.get(inv.build)
        return Take(slowdown=speed.get(ref, 1.0) * (1 + rng.gauss(0, noise)))

    return script


def baseline_pairs(run: Path) -> list[tuple[float, float]]:
    samples = load_samples(run)
    (cell,) = pairs(samples, "baseline_tps", "base", "head").values()
    return list(zip(cell.base, cell.head, strict=True))


def test_an_undecided_round_gets_another_until_the_gate_decides(tmp_path, replay):
    """An A/A with 0.5% noise at a 5% threshold: one pair cannot decide (no noise estimate), so `ab`
    adds rounds past the config's one repetition and stops at the first that decides."""
    shas = llama_shaped_repo(tmp_path / "repo", 2)
    replay.script = noisy(replay, {}, 0.005)
    repo = tmp_path / "repo"
    r = invoke("ab", CI, "--base", f"{repo}@{shas[0]}", "--head", f"{repo}@{shas[1]}",
               "--format", "json", "--out", tmp_path / "aa", *ONE_PAIR_A_ROUND, cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    (d,) = [x for x in json.loads(r.stdout)["decisions"] if x["metric"] != "output"]
    assert d["decision"] == "pass" and d["n_pairs"] >= 2, d
    values = baseline_pairs(tmp_path / "aa")
    assert len(values) == d["n_pairs"] and len(replay.measured()) == 2 * d["n_pairs"]
    for k in range(1, len(values)):  # it stopped at the first round that decided
        base, head = zip(*values[:k], strict=True)
        assert decide(list(base), list(head), "baseline_tps", 0.05).status == Status.TOO_NOISY, k


def test_the_budget_starts_a_round_only_if_the_last_rounds_pace_ends_it_in_time(tmp_path, replay):
    """A noisy pair: head 3% slower, then 3% faster, by turns (undecided at any count). A pair
    takes ~5 virtual seconds (two 64-token baselines as recorded, ~2.5 s each): a 13 s budget runs
    round 1 and one more (ending at ~10 s), not a third (at the last round's pace it would end at
    ~15 s), and says the budget stopped it."""
    shas = llama_shaped_repo(tmp_path / "repo", 2)
    replay.script = lambda inv, n: Take(
        slowdown=1.0 if inv.build == "base" else (1.03, 0.97)[inv.repetition % 2]
    )
    repo = tmp_path / "repo"
    r = invoke("ab", CI, "--base", f"{repo}@{shas[0]}", "--head", f"{repo}@{shas[1]}",
               "--format", "json", "--out", tmp_path / "aa", *ONE_PAIR_A_ROUND, "--budget", "13s",
               cwd=tmp_path)  # fmt: skip
    assert r.returncode == 3, r.stdout[-2000:] + r.stderr[-3000:]  # undecided: never a silent pass
    (d,) = [x for x in json.loads(r.stdout)["decisions"] if x["metric"] != "output"]
    assert d["decision"] == "undecided" and d["n_pairs"] == 2
    assert "undecided cells: --budget 13 s spent (1 round after the first)" in r.stderr


def test_bisect_of_8_commits_names_the_first_slow_one_and_a_slow_build_spends_no_budget(tmp_path, replay):
    """Commits 5 and later are 10% slower (1% noise): bisect walks 8 commits after --good in 3
    steps and names commit 5. Each build takes 10 virtual minutes; the steps' 60 s budget is
    their measuring time, so every step still gets its rounds and decides."""
    shas = llama_shaped_repo(tmp_path / "repo", 9)  # --good and 8 commits after it
    replay.build_s = 600.0
    replay.script = noisy(replay, {sha: 1.1 for sha in shas[5:]}, 0.01)
    r = invoke("bisect", CI, "--source", tmp_path / "repo", "--good", shas[0], "--bad", shas[8],
               "--out", tmp_path / "bis", *ONE_PAIR_A_ROUND, "--budget", "60s", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "8 first-parent commits" in r.stdout
    assert f"first bad commit: {shas[5]} c5" in r.stdout
    steps = [ln.split()[2] for ln in r.stdout.splitlines() if ln.startswith("step ")]
    assert len(steps) == 3 and steps[-1] in (shas[5][:10], shas[4][:10])
    assert {ref for _, ref in replay.builds} <= set(shas) and len(replay.builds) == 2 * 3


def test_a_bisect_step_the_budget_leaves_undecided_stops_the_search_and_says_where(tmp_path, replay):
    """The budget is each step's: with the pair noisy (head 3% slower, then faster, by turns) a
    step cannot decide in 13 s of pairs; bisect exits 3 and names the range the first bad commit is in."""
    shas = llama_shaped_repo(tmp_path / "repo", 5)
    replay.script = lambda inv, n: Take(
        slowdown=1.0 if inv.build == "base" else (1.03, 0.97)[inv.repetition % 2]
    )
    r = invoke("bisect", CI, "--source", tmp_path / "repo", "--good", shas[0], "--bad", shas[4],
               "--out", tmp_path / "bis", *ONE_PAIR_A_ROUND, "--budget", "13s", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 3, r.stdout[-2000:] + r.stderr[-3000:]
    assert f"undecided: step at {shas[2][:10]} could not be decided" in r.stdout
    assert f"the first bad commit is after {shas[0][:10]} and at or before {shas[4][:7]}" in r.stdout


def _eras(replay, monkeypatch, old: BuildInfo, refs: set[str]) -> None:
    """The replay's builds, those of ``refs`` as an older era's tree builds: its programs' recorded
    --help (``old``), so each step's plan speaks to each commit's programs as a real bisect would."""
    import specbench.execute.preparation as preparation

    recorded = replay.ensure_builds

    def ensure(config, progress=None):
        out = recorded(config, progress)
        for label, b in out.items():
            if replay.refs[label] in refs:
                binaries = {
                    role: info.model_copy(update={"flags": old.binaries[role].flags})
                    for role, info in b.binaries.items()
                }
                out[label] = b.model_copy(update={"binaries": binaries, "programs": old.programs})
        return out

    monkeypatch.setattr(preparation, "ensure_builds", ensure)


def test_bisect_across_two_eras_of_one_history(tmp_path, replay, monkeypatch):
    """A history whose first commit is a 2025 tree (llama-cpp-python 0.3.16's llama.cpp: the classic
    draft options, no --spec-type) and whose next ones are the pinned tree's era: each step plans
    each commit with its own programs' spellings and the gate compares them as any two builds
    (commit 1 10% slower: named); a method the older era lacks stops the bisect at its first step
    in one line, before anything is measured."""
    shas = llama_shaped_repo(tmp_path / "repo", 3)
    _eras(replay, monkeypatch, build_2025(tmp_path / "era-2025"), {shas[0]})
    replay.script = noisy(replay, {sha: 1.1 for sha in shas[1:]}, 0.01)
    one_pair = [a if a != "baseline_tps" else "spec_tps" for a in ONE_PAIR_A_ROUND]  # speculative runs
    args = ["bisect", CI, "--source", tmp_path / "repo", "--good", shas[0], "--bad", shas[2],
            *one_pair, "--budget", "60s"]  # fmt: skip
    r = invoke(*args, "--out", tmp_path / "bis", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert f"first bad commit: {shas[1]} c1" in r.stdout
    spec = {i.build: i.argv for i in replay.measured() if i.role == "speculative"}
    assert set(spec) == {"base", "head"}
    old, new = flag_values(spec["base"]), flag_values(spec["head"])
    assert "--spec-type" not in spec["base"] and old["--draft-max"] == "8" and "-md" in old  # 2025: -md alone
    assert new["--spec-type"] == "draft-simple" and new["--spec-draft-n-max"] == "8"  # the pin's spelling

    replay.log.clear()
    r = invoke(*args, "--set", "sweep.method=[ngram-simple]", "--out", tmp_path / "ngram", cwd=tmp_path)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-3000:]
    (line,) = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert f"bisect step base {shas[0][:10]}, head {shas[1][:10]}: build 'base'" in line, (
        line
    )  # the 2025 commit
    assert "ngram-simple" in line and "no --spec-type" in line, line
    assert replay.measured() == []

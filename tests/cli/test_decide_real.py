"""`ab` and `bisect` decide by default (issue 32), on real builds of tests/fixtures/llama_history.

The config's fixed ``repetitions: 1`` with one prompt gives one pair a round. The pair compared is
the pinned tree against a notes-only commit (the same code), judged at a 95% threshold: one pair
can never pass (no noise estimate) and an A/A cannot be 95% slower, so the first round is always
undecided, and two or three pairs of an A/A give a t interval inside 95%, so a round or two
later it passes. What happens after round 1 is the rounds ``ab`` adds on its own, or the
``--budget`` that stops them; neither depends on how loaded the machine is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import specbench
from tests.helpers.realruns import threads

# the integration tier (make test-integration): each rule here is also proven over replayed runs in
# tests/cli/test_ab_replay.py (docs/development.md, "Tests and linters")
pytestmark = [pytest.mark.slow, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "ci.yaml"
ONE_PAIR_A_ROUND = ["--set", "prompts.ids=[math-03]", "--set", "repetitions=1", "--set", "warmup=0",
                    "--set", "generation.n_predict=16", "--set", f"generation.threads={threads()}",
                    "--set", "sentinel=false",
                    "--metric", "baseline_tps", "--threshold", "95%",
                    "--quiet"]  # fmt: skip


def _baseline_pairs(run: Path) -> list[tuple[float, float]]:
    """(base, head) baseline t/s per repetition, in repetition order."""
    from specbench.gate.ab import pairs
    from specbench.results.samplelog import load_samples

    samples = load_samples(run)
    (cell,) = pairs(samples, "baseline_tps", "base", "head").values()
    reps = sorted({s.repetition for s in samples if s.role == "baseline" and s.build == "head" and s.valid})
    assert len(reps) == len(cell.base)  # one prompt: pair k is repetition k
    return list(zip(cell.base, cell.head, strict=True))


def test_a_fixed_count_is_only_the_first_round_ab_adds_rounds_until_decided(
    tmp_path, llama_history, smol_f32
):
    h = llama_history
    r = specbench("ab", CONFIG, "--base", f"{h.repo}@{h.shas[0]}", "--head", f"{h.repo}@{h.shas[1]}",
                  "--format", "json", "--out", tmp_path / "aa", *ONE_PAIR_A_ROUND, cwd=tmp_path,
                  timeout=3600)  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "round 1 is 1 repetition;" in r.stderr  # the plan's note: rounds follow, up to max_repetitions
    decisions = json.loads(r.stdout)["decisions"]
    (d,) = [x for x in decisions if x["metric"] != "output"]  # the greedy text check has its own rows
    assert d["decision"] == "pass" and d["n_pairs"] >= 2, d  # more than the config's one repetition
    from specbench.gate.ab import decide
    from specbench.gate.decision import Status

    values = _baseline_pairs(tmp_path / "aa")
    assert len(values) == d["n_pairs"]
    # it stopped at the first round that decided: every shorter prefix was undecided
    for k in range(1, len(values)):
        base, head = zip(*values[:k], strict=True)
        assert decide(list(base), list(head), "baseline_tps", 0.95).status == Status.TOO_NOISY, k


def test_budget_stops_the_rounds_and_the_cell_is_reported_undecided(tmp_path, llama_history, smol_f32):
    h = llama_history
    r = specbench("ab", CONFIG, "--base", f"{h.repo}@{h.shas[0]}", "--head", f"{h.repo}@{h.shas[1]}",
                  "--format", "json", "--out", tmp_path / "aa", *ONE_PAIR_A_ROUND, "--budget", "0.001",
                  cwd=tmp_path, timeout=3600)  # fmt: skip
    assert r.returncode == 3, r.stdout[-2000:] + r.stderr[-3000:]  # undecided: never a silent pass
    (d,) = [x for x in json.loads(r.stdout)["decisions"] if x["metric"] != "output"]
    # a real round (two llama.cpp processes) takes more than a millisecond on any machine
    assert d["decision"] == "undecided" and d["n_pairs"] == 1
    assert "undecided cells: --budget 0.001 s spent (0 rounds after the first)" in r.stderr
    # bisect: the budget is per step; the step stops undecided and says why, the search says where
    b = specbench("bisect", CONFIG, "--source", h.repo, "--good", h.shas[0], "--bad", h.shas[-1],
                  "--out", tmp_path / "b", *ONE_PAIR_A_ROUND, "--budget", "0.001s", cwd=tmp_path,
                  timeout=3600)  # fmt: skip
    assert b.returncode == 3, b.stdout + b.stderr[-3000:]
    (step,) = [ln for ln in b.stdout.splitlines() if ln.startswith("step ")]
    assert h.shas[1][:10] in step and "undecided" in step and "--budget 0.001 s spent" in step
    assert f"the first bad commit is after {h.shas[0][:10]}" in " ".join(b.stdout.split())

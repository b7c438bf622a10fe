"""`drafts` end to end on the real build: Hub candidates ranked from range reads, the two best
downloaded and measured (`--measure 2`). Real llama-bench and llama-speculative-simple runs: slow.
Only the plumbing is asserted (what was read, fetched and measured), never this machine's speed."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.models.resolve import resolve_models
from specbench.models.spec import DeriveSource, ModelSpec
from specbench.tune.draftmeasure import measure
from specbench.tune.draftmodels import Request
from specbench.tune.drafts import rank
from tests.fixtures.models import SMOL_Q4
from tests.helpers.hub import requested_ranges
from tests.helpers.realruns import threads

# integration tier (issue 60); its rules, replayed or on stand-ins: docs/development.md's table
pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_rank_then_measure_the_two_best(hub, llama_build, smol_f32, smol_q4, gemma_q4, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBENCH_CALIBRATION", str(tmp_path / "cal"))
    home = Path(smol_q4.path).parents[3]  # the real cache holds the derived Q8_0 (made once, seconds)
    monkeypatch.setenv("SPECBENCH_HOME", str(home))
    specs = {"smol_q4": SMOL_Q4, "q8": ModelSpec(derive=DeriveSource(from_="smol_q4", quant="Q8_0"))}
    q8 = resolve_models(specs, base_dir=Path("."), build=llama_build, only=["q8"])["q8"]
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))  # downloads go to an empty cache
    hub.add_commit("org/smol-q4", {"SmolLM2-135M-Instruct-Q4_1.gguf": smol_q4.path})
    hub.add_commit("org/smol-q8", {"SmolLM2-135M-Instruct-Q8_0.gguf": q8.path})
    hub.add_commit("org/gemma", {"gemma-3-270m-q4_k_m.gguf": gemma_q4.path})
    candidates = ["org/smol-q4", "org/smol-q8", "org/gemma", "org/none"]
    req = Request(target=str(smol_f32.path), candidates=candidates, max_draft=4, threads=threads())
    result = rank(req, llama_build)
    assert all(n <= 4 << 20 for p, n in requested_ranges(hub).items() if "smol" in p)  # headers only
    rows = {r.candidate.split("/")[1]: r for r in result.rows if "/" in r.candidate}
    assert not rows["gemma"].compatible and "vocabulary type" in rows["gemma"].reason
    assert "not found" in rows["none"].reason
    ranked = [r for r in result.rows if r.rank]
    if len(ranked) < 2:  # on a machine where neither SmolLM2 draft can ever pay, there is nothing to measure
        pytest.skip(
            f"only {len(ranked)} candidate(s) can break even here: {[r.candidate for r in result.rows]}"
        )
    hub.requests.clear()
    monkeypatch.setenv("SPECBENCH_HOME", str(home))  # the run finds the cached build there (never builds)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))  # and downloads into an empty Hub cache

    def no_build(*args, **kwargs):
        raise AssertionError("drafts --measure started a llama.cpp build; it must use the cached one")

    monkeypatch.setattr("specbench.builder.builder._build", no_build)
    run_dir, measured = measure(result, 2, tmp_path / "run", None, llama_build.backend,
                                overrides={"prompts": {"suite": "builtin", "ids": ["math-03"]},
                                           "generation": {"n_predict": 16}, "repetitions": 2,
                                           "warmup": 0, "sentinel": False})  # fmt: skip
    fetched = [r.path for r in hub.requests if r.method == "GET" and "/resolve/" in r.path and not r.range]
    assert sorted(Path(p).name for p in fetched) == sorted(Path(r.candidate).name for r in ranked[:2])
    assert run_dir == tmp_path / "run" and (run_dir / "manifest.json").is_file()
    assert {m.candidate for m in measured} == {r.candidate for r in ranked[:2]}
    for m in measured:
        assert m.speedup is not None and m.speedup > 0 and m.acceptance is not None
        assert m.speedup_ci_low <= m.speedup <= m.speedup_ci_high
        assert m.predicted_speedup is not None and m.predicted_speedup > 0
    assert [m.speedup for m in measured] == sorted((m.speedup for m in measured), reverse=True)

"""`drafts --measure`: the run config it measures the best-ranked drafts with."""

from __future__ import annotations

from specbench.tune.draftmeasure import PROMPT_IDS, measure_config
from specbench.tune.draftmodels import DraftRow
from specbench.tune.drafts import DraftsResult
from tests.fixtures.replay import Take
from tests.models.tiny_gguf import write_tiny_gguf


def _row(name: str, g: int | None, rank: int | None) -> DraftRow:
    return DraftRow(candidate=name, kind="local", compatible=True, draft_max=g, rank=rank)


def test_each_chosen_draft_is_a_pair_with_the_target_at_its_draft_length(tmp_path):
    result = DraftsResult(target=_row("t", None, None), target_costs="measured",
                          rows=[_row("a", 8, 1), _row("b", 3, 2), _row("c", 5, None)])  # fmt: skip
    chosen = [r for r in result.rows if r.rank]
    files = {n: tmp_path / f"{n}.gguf" for n in ("target", "a", "b")}
    for f in files.values():
        f.write_bytes(b"GGUF")
    cfg = measure_config(result, chosen, files, None, "cpu")
    assert cfg.models["target"].path == str(files["target"]) and cfg.models["draft2"].path == str(files["b"])
    assert {p: (c.target, c.draft) for p, c in cfg.pairs.items()} == {
        "draft1": ("target", "draft1"),
        "draft2": ("target", "draft2"),
    }
    assert cfg.sweep.method == ["draft"] and cfg.sweep.draft_max == [3, 8]
    assert cfg.repetitions == "auto" and cfg.prompts.ids == PROMPT_IDS


def test_measure_runs_the_chosen_drafts_and_orders_them_by_measured_speedup(tmp_path, replay):
    """`drafts --measure 2` end to end over replayed runs (tests/fixtures/replay.py): only the two
    best-ranked drafts (the quickstart's Q4_1 draft in two folders; the third, on the Hub, is never
    fetched) are measured against the target in one run, each gets its speedup, interval,
    acceptance and the speed model's prediction, and they come back by measured speedup: the
    second-ranked one, replayed twice as fast, first."""
    from specbench.results.calibration import PassCosts
    from specbench.tune.draftmeasure import measure

    files = {}
    q4 = "SmolLM2-135M-Instruct.Q4_1.gguf"
    for name, file in (("target", "SmolLM2-135M-Instruct.Q4_1.F32.gguf"), ("slow", q4), ("fast", q4)):
        (tmp_path / name).mkdir()
        files[name] = write_tiny_gguf(tmp_path / name / file)  # a header to plan with; nothing runs it
    costs = PassCosts(model="m", decode_s=0.02, pass_s={1: 0.02, 2: 0.021, 9: 0.03})
    row = {"kind": "local", "compatible": True, "pass_costs": costs}
    result = DraftsResult(
        target=DraftRow(candidate=str(files["target"]), path=files["target"], **row),
        target_costs="measured",
        rows=[*(DraftRow(candidate=str(files[n]), path=files[n], draft_max=8, rank=i, **row)
                for i, n in ((1, "slow"), (2, "fast"))),
              DraftRow(candidate="org/third", source="org/third/x.gguf@main", draft_max=8, rank=3, **row)],
    )  # fmt: skip
    fast = str(tmp_path / "fast")
    replay.script = lambda inv, n: (
        Take(slowdown=0.5) if inv.role == "speculative" and fast in " ".join(inv.argv) else Take()
    )
    overrides = {"prompts": {"suite": "builtin", "ids": ["code-02"]}, "generation": {"n_predict": 64},
                 "repetitions": 2, "warmup": 0, "sentinel": False}  # fmt: skip
    run_dir, measured = measure(result, 2, tmp_path / "run", None, "cpu", overrides=overrides)
    assert run_dir == tmp_path / "run" and (run_dir / "manifest.json").is_file()
    assert [m.candidate for m in measured] == [str(files["fast"]), str(files["slow"])]
    for m in measured:
        assert m.speedup is not None and m.speedup > 0 and m.acceptance is not None
        assert m.speedup_ci_low <= m.speedup <= m.speedup_ci_high
        assert m.predicted_speedup is not None and m.predicted_speedup > 0
    assert measured[0].speedup > measured[1].speedup

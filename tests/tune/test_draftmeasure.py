"""`drafts --measure`: the run config it measures the best-ranked drafts with."""

from __future__ import annotations

from specbench.tune.draftmeasure import PROMPT_IDS, measure_config
from specbench.tune.draftmodels import DraftRow
from specbench.tune.drafts import DraftsResult


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
        "draft1": ("target", "draft1"), "draft2": ("target", "draft2")}  # fmt: skip
    assert cfg.sweep.method == ["draft"] and cfg.sweep.draft_max == [3, 8]
    assert cfg.repetitions == "auto" and cfg.prompts.ids == PROMPT_IDS

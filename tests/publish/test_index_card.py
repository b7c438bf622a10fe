"""The results site's index card: the latest run's spec and baseline t/s whatever its baseline
timed, and a gate line that compares only runs of the same cells (like with like). On histories of
recorded run folders (tests/data/runs) edited in tmp."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from specbench.gate.historydb import record_run
from specbench.publish import pages
from specbench.publish.folders import Folders
from specbench.publish.series import load_series

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def _copy(tmp: Path, name: str, new_name: str, started_at: str, format_version: int | None = None,
          scale: float = 1.0) -> Path:  # fmt: skip
    """A recorded run folder as another run (id, start, format), its t/s scaled by ``scale``."""
    dst = tmp / new_name
    shutil.copytree(RUNS / name, dst)
    m = json.loads((dst / "manifest.json").read_text())
    m.update(run_id=new_name, started_at=started_at)
    if format_version is not None:
        m["format_version"] = format_version
    (dst / "manifest.json").write_text(json.dumps(m))
    lines = [json.loads(x) for x in (dst / "samples.jsonl").read_text().splitlines() if x]
    for s in lines:
        s["run_id"] = new_name
        if s.get("tps") and s["role"] == "speculative":
            s["tps"] *= scale
    (dst / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in lines))
    return dst


def _cards(db: Path) -> dict[str, dict]:
    model = pages.Model(series=load_series([db]), folders=Folders())
    return {
        pair: pages._card(model, machine, pair, found) for (machine, pair), found in model.pairs().items()
    }


def test_a_same_span_run_shows_both_spec_and_baseline_tps(tmp_path):
    """A run folder of format 2 stores its speedup under a marked id: the card still finds the
    cell's spec t/s and its baseline."""
    db = tmp_path / "history.sqlite"
    record_run(_copy(tmp_path, "quickstart-3rep", "new", "2026-11-25T12:00:00+00:00", format_version=2), db)
    card = _cards(db)["smol"]
    assert card["speedup"] != "-" and card["spec"] != "-" and card["baseline"] != "-"
    spec, base = float(card["spec"]), float(card["baseline"])
    # issue 58: the t/s are averaged as the speedup is, so they divide to it (within the rounding)
    rounding = spec / base * (0.05 / spec + 0.05 / base) + 0.005
    assert spec > 0 and base > 0 and abs(spec / base - float(card["speedup"].split("x")[0])) <= rounding


def test_the_gate_line_compares_only_runs_of_the_same_cells(tmp_path):
    db = tmp_path / "history.sqlite"
    # two runs of unrelated configs (other n_predict and prompts): nothing to compare
    record_run(_copy(tmp_path, "quick-cpu", "a", "2026-11-22T04:00:00+00:00"), db)
    record_run(_copy(tmp_path, "quickstart-3rep", "b", "2026-11-25T12:00:00+00:00"), db)
    card = _cards(db)["smol"]
    assert card["n_runs"] == 2 and card["gate_class"] == "muted"
    assert card["gate"].startswith("no earlier run of the same config")
    # a later run of b's config, its speculative t/s halved: judged against b, and fails
    record_run(_copy(tmp_path, "quickstart-3rep", "c", "2026-11-26T12:00:00+00:00", scale=0.5), db)
    card = _cards(db)["smol"]
    assert card["gate_class"] == "fail" and "regressions flagged" in card["gate"]


def test_the_headline_is_a_decided_real_cell_or_says_what_it_is(tmp_path):
    """Issue 58: after a 2-repetition synthetic run the card read ``2.61x [0.00, 373145.74]`` in large
    type. Now it says ``undecided`` (no real cell is decided), and with 3 repetitions it shows the
    decided real cell, not the synthetic one with the higher figure."""
    from tests.helpers.synthetic import synthetic_run

    db = tmp_path / "history.sqlite"
    record_run(synthetic_run(tmp_path, "two", reps=2, started_at="2026-11-25T12:00:00+00:00"), db)
    card = _cards(db)["smol"]
    assert card["speedup"] == "undecided" and "undecided" in card["why"]
    assert "ngram-simple" not in card["cell"] or "1.40x" in card["why"]
    record_run(synthetic_run(tmp_path, "three", reps=3, started_at="2026-11-26T12:00:00+00:00"), db)
    card = _cards(db)["smol"]
    assert card["speedup"].startswith("1.40x [1.03, 1.92]") and card["why"] == ""
    best = pages.best_page(pages.Model(series=load_series([db]), folders=Folders()))
    assert "1.40x [1.03, 1.92]" in best and "synth_len" not in best

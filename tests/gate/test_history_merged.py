"""A merged run supersedes its shards in history: recording it removes the shards' entries (the
same samples would otherwise be a trend's points twice), and a shard recorded afterwards is not
recorded again. On shards cut from a recorded run folder (tests/data/runs/quick-cpu)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from specbench.gate.history import load_history
from specbench.gate.historydb import SUPERSEDED_NOTE, record_run
from specbench.results.merge import merge_runs

RECORDED = Path(__file__).resolve().parents[1] / "data" / "runs" / "quick-cpu"


def cut_into_shards(root: Path) -> list[Path]:
    """quick-cpu as two shards of one plan: draft_max 4 in shard 1/2, the other speculative cells in
    2/2; each shard has its own baselines and drafts alone, as a sharded run measures them."""
    manifest = json.loads((RECORDED / "manifest.json").read_text())
    samples = [json.loads(line) for line in (RECORDED / "samples.jsonl").read_text().splitlines() if line]
    mine = {"1/2": lambda s: s.get("draft_max") == 4, "2/2": lambda s: s.get("draft_max") != 4}
    cells = {"1/2": ["draft_max=4"], "2/2": ["others"]}
    out = []
    for i, shard in enumerate(("1/2", "2/2"), 1):
        d = root / f"shard-{i}"
        d.mkdir(parents=True)
        m = dict(manifest, run_id=f"shard-{i}", started_at=f"2026-11-22T04:2{i}:00+00:00", shard=shard,
                 shard_cells=cells[shard], plan_cells=["draft_max=4", "others"], plan_id="a")  # fmt: skip
        (d / "manifest.json").write_text(json.dumps(m))
        kept = [dict(s, run_id=f"shard-{i}", shard=shard) for s in samples
                if s["role"] != "speculative" or mine[shard](s)]  # fmt: skip
        (d / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in kept))
        out.append(d)
    return out


def _run_ids(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return sorted(r[0] for r in conn.execute("SELECT run_id FROM runs"))


def test_a_merged_run_replaces_its_shards_in_history(tmp_path):
    db = tmp_path / "history.sqlite"
    shards = cut_into_shards(tmp_path)
    for s in shards:  # each shard's `specbench run` records itself
        assert record_run(s, db) > 0
    assert _run_ids(db) == ["shard-1", "shard-2"]
    merged = merge_runs(shards, tmp_path / "merged").out
    assert record_run(merged, db) > 0
    assert _run_ids(db) == ["merged"]
    # one point per cell: the merged run's, not the shards' beside it
    points = load_history(db, "spec_tps")
    assert points and {p.run_id for p in points} == {"merged"}
    assert len({(p.label, p.prompts) for p in points}) == len(points)
    # a shard recorded again (history --add, a resume) stays out, with a note saying why
    notes: list[str] = []
    assert record_run(shards[0], db, notes) == 0
    assert _run_ids(db) == ["merged"] and any(SUPERSEDED_NOTE in n for n in notes)
    # recording the merged run again is idempotent
    assert record_run(merged, db) > 0 and _run_ids(db) == ["merged"]


def test_an_unsharded_run_is_recorded_as_before(tmp_path):
    db = tmp_path / "history.sqlite"
    assert record_run(RECORDED, db) > 0
    assert _run_ids(db) == ["quick-cpu"]

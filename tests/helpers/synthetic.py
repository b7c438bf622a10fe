"""A recorded run folder made into the issue-58 case: two repetitions whose draft cells are
synthetic (``synth_len``: drafts accepted at random) with a speedup that is highest and an interval
too wide to mean anything, beside real cells. For the one rule of what may be called best."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def synthetic_run(tmp: Path, name: str = "synth", reps: int = 2, started_at: str | None = None) -> Path:
    """quickstart-3rep with ``reps`` repetitions; its draft cells synthetic (synth_len 4), their
    t/s 20x the recorded in repetition 0 and 0.8x in the others: the highest speedup, undecided."""
    dst = tmp / name
    shutil.copytree(RUNS / "quickstart-3rep", dst)
    m = json.loads((dst / "manifest.json").read_text())
    m["run_id"] = name
    if started_at is not None:
        m["started_at"] = started_at
    (dst / "manifest.json").write_text(json.dumps(m))
    kept = []
    for line in (dst / "samples.jsonl").read_text().splitlines():
        s = json.loads(line)
        if s["repetition"] >= reps:
            continue
        s["run_id"] = name
        if s["role"] == "speculative" and s["method"] == "draft":
            s["synth_len"], s["synthetic"] = 4.0, True
            s["outputs_match"] = None
            if s.get("tps"):
                s["tps"] *= 20.0 if s["repetition"] == 0 else 0.8
        kept.append(json.dumps(s))
    (dst / "samples.jsonl").write_text("\n".join(kept) + "\n")
    return dst

"""Repetitions of a greedy cell must agree, and both sides of a speedup must time the same tokens
(issue 42): checked on a recorded real run, edited the way each fault shows in a run folder."""

from __future__ import annotations

from pathlib import Path

from specbench.analysis.cells import ALL, run_rows
from specbench.gate.baseline import load_run

RUN = Path(__file__).parents[1] / "data" / "runs" / "quickstart-3rep"


def _rows(samples, facts):
    return [r for r in run_rows("r", samples, facts) if r.category == ALL]


def test_a_repetition_that_drafted_differently_marks_its_cell_and_says_why():
    side = load_run(RUN)
    assert all(r.repeatable in (True, None) for r in _rows(side.samples, side.facts))
    spec = [s for s in side.samples if s.role == "speculative" and s.valid and s.metrics]
    victim = next(s for s in spec if s.repetition == 2)  # as a pool primed by repetition 1 would do
    victim.metrics = victim.metrics.model_copy(update={"n_accept": (victim.metrics.n_accept or 0) + 7})
    rows = _rows(side.samples, side.facts)
    marked = [r for r in rows if r.repeatable is False]
    assert len(marked) == 1 and marked[0].method == victim.method and marked[0].draft_max == victim.draft_max
    why = next(w for w in marked[0].warnings if w.startswith("not repeatable"))
    assert victim.prompt_id in why and "state llama.cpp kept between requests" in why


def test_a_speculative_side_timed_over_more_tokens_than_its_baseline_is_named():
    side = load_run(RUN)
    for s in side.samples:
        if s.valid and s.status == "ok":
            s.timed_tokens = s.generation.n_predict
    assert not any(w.startswith("unequal work") for r in _rows(side.samples, side.facts) for w in r.warnings)
    victim = next(s for s in side.samples if s.role == "speculative" and s.valid)
    victim.timed_tokens = victim.generation.n_predict + 49  # llama-speculative-simple went past -n
    warned = [w for r in _rows(side.samples, side.facts) for w in r.warnings if w.startswith("unequal work")]
    assert warned and f"timed over {victim.generation.n_predict + 49} tokens" in warned[0]

"""The server runner's bracketed baseline: the window nearer in time to a cell serves it, and the
windows' means compare over the prompts and repetitions both measured."""

from __future__ import annotations

from specbench.results.bracket import AFTER, baseline_windows, nearer, window_means
from specbench.results.records import Generation, Sample


def _sample(role: str, minute: int, tps: float, prompt: str = "p", rep: int = 0) -> Sample:
    return Sample(
        role=role, model="t", runner="server", prompt_id=prompt, category="c", repetition=rep,
        generation=Generation(), run_id="r", status="ok", valid=True, tps=tps, wall_s=1.0,
        started_at=f"2026-01-01T00:{minute:02d}:00+00:00",
    )  # fmt: skip


def test_each_cell_is_judged_against_the_nearer_window():
    before = [_sample("baseline", 0, 40.0), _sample("baseline", 1, 40.0, "q")]
    after = [_sample(AFTER, 20, 30.0), _sample(AFTER, 21, 30.0, "q")]
    early = [_sample("speculative", 3, 60.0), _sample("speculative", 4, 60.0, "q")]
    late = [_sample("speculative", 17, 45.0), _sample("speculative", 18, 45.0, "q")]
    assert nearer(early, before, after) == (before, False)
    assert nearer(late, before, after) == (after, True)


def test_an_after_window_missing_a_prompt_does_not_serve():
    before = [_sample("baseline", 0, 40.0), _sample("baseline", 1, 40.0, "q")]
    after = [_sample(AFTER, 20, 30.0)]  # interrupted before "q"
    late = [_sample("speculative", 19, 45.0)]
    assert nearer(late, before, after) == (before, False)


def test_window_means_use_only_what_both_measured():
    before = [_sample("baseline", 0, 40.0), _sample("baseline", 1, 20.0, "q")]
    after = [_sample(AFTER, 20, 30.0)]
    assert window_means(before, after) == (40.0, 30.0)
    (w,) = baseline_windows([*before, *after, _sample("speculative", 5, 50.0)])
    assert (w.before_tps, w.after_tps, round(w.moved, 2)) == (40.0, 30.0, -0.25)
    assert w.group.startswith("t") and "runner=server" in w.group

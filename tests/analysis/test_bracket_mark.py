"""The mark of a server-runner cell measured across a change of the machine's speed, on stated
numbers (the real run with CPU spinners, tests/machine/test_sentinel.py, is a `perf` test): the
baseline's two windows differ beyond the run's precision -> a warning that names the move and both
speeds; within it -> no mark."""

from __future__ import annotations

from specbench.analysis.cells import bracket_warning
from specbench.analysis.quality import DEFAULT_PRECISION
from specbench.results.bracket import AFTER
from specbench.results.records import Generation, Sample


def _sample(role: str, minute: int, tps: float, prompt: str = "p") -> Sample:
    return Sample(
        role=role, model="t", runner="server", prompt_id=prompt, category="c", repetition=0,
        generation=Generation(), run_id="r", status="ok", valid=True, tps=tps, wall_s=1.0,
        started_at=f"2026-01-01T00:{minute:02d}:00+00:00",
    )  # fmt: skip


def test_a_baseline_that_moved_25_percent_between_its_windows_marks_the_cell():
    before = [_sample("baseline", 0, 40.0), _sample("baseline", 1, 40.0, "q")]
    after = [_sample(AFTER, 20, 30.0), _sample(AFTER, 21, 30.0, "q")]
    text = bracket_warning(before, after, None)
    assert text is not None and text.startswith("speed moved: the baseline moved -25% ")
    assert "(40.0 to 30.0 t/s)" in text and f"precision {DEFAULT_PRECISION:.0%}" in text
    assert text.format(window="after").endswith("judged against the nearer (after) window")


def test_a_move_within_the_precision_is_no_mark():
    small = 40.0 * (1 - DEFAULT_PRECISION / 2)
    before = [_sample("baseline", 0, 40.0)]
    assert bracket_warning(before, [_sample(AFTER, 20, small)], None) is None
    assert bracket_warning(before, [], None) is None  # no after window: nothing to compare

"""How long a pair of a run spans (what the sentinel's drift within a pair is measured over), from
the samples' own start and wall times."""

from __future__ import annotations

from specbench.execute.benchmark import pair_span_s
from specbench.results.records import Generation, Sample


def _sample(
    role: str, build: str, start_s: int, wall_s: float, prompt: str = "p", model: str = "t"
) -> Sample:
    extra = {"pair": "t-d", "draft": "d", "method": "draft", "draft_max": 8} if role == "speculative" else {}
    return Sample(
        role=role, model="t", build=build, prompt_id="p", category="c", repetition=0,
        generation=Generation(), run_id="r", status="ok", valid=True, wall_s=wall_s,
        started_at=f"2026-11-25T15:00:{start_s:02d}+00:00", **extra,
    )  # fmt: skip


def test_a_pair_is_both_builds_runs_or_a_speculative_run_with_its_baseline():
    samples = [
        _sample("baseline", "a", 0, 2.0),  # builds' pair: 0..4 s -> 4 s
        _sample("baseline", "b", 2, 2.0),
        _sample("speculative", "a", 4, 3.0),  # builds' pair 4..10 -> 6 s; with a's baseline 0..7 -> 7 s
        _sample("speculative", "b", 7, 3.0),  # with b's baseline 2..10 -> 8 s
    ]
    assert pair_span_s(samples) == 6.5  # median of 4, 6, 7, 8


def test_a_lone_sample_is_no_pair():
    assert pair_span_s([_sample("baseline", "a", 0, 2.0)]) is None
    assert pair_span_s([]) is None

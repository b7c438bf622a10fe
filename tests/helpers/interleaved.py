"""A run of two builds interleaved back to back (an A/A of two labels), checked alike on its replayed
runs (tests/execute/test_server_replay.py) and its real ones (tests/cli/test_run_builds.py)."""

from __future__ import annotations

from collections.abc import Sequence

from specbench.results.cell import baseline_of
from specbench.results.records import Sample


def check_interleaved(samples: Sequence[Sample], n: int = 12) -> None:
    """Every baseline, cell and draft-alone run twice in a row, a then b in repetition 0, b then a in 1;
    every sample ok and valid; every speculative sample judged against its own build's baseline of the
    same prompt and repetition, whose output it matches at temperature 0."""
    assert len(samples) == n and {s.build for s in samples} == {"a", "b"}
    for first, second in zip(samples[::2], samples[1::2], strict=True):
        assert (first.role, first.prompt_id, first.repetition) == (
            second.role,
            second.prompt_id,
            second.repetition,
        )
        assert (first.build, second.build) == (("a", "b") if first.repetition == 0 else ("b", "a"))
    for s in samples:
        assert s.status == "ok" and s.valid, s.invalid_reason
    baselines = {(baseline_of(s), s.prompt_id, s.repetition) for s in samples if s.role == "baseline"}
    spec = [s for s in samples if s.role == "speculative"]
    assert spec, "no speculative sample to judge"
    for s in spec:
        assert (baseline_of(s), s.prompt_id, s.repetition) in baselines and s.outputs_match is True

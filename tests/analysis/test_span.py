"""Each side's share of its span outside the target's decode step (specbench.analysis.cells), on
recorded logs of the pinned build (tests/logs/real)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.analysis.cells import baseline_outside, span_fields, spec_outside
from specbench.parse.process import parse_file
from specbench.results.records import Generation, Sample

LOGS = Path(__file__).parents[1] / "logs" / "real"


def sample(role: str, log: str, **kw) -> Sample:
    return Sample(role=role, model="t", prompt_id="p", category="c", repetition=0, generation=Generation(),
                  run_id="r", status="ok", valid=True, wall_s=1.0, started_at="now",
                  metrics=parse_file(LOGS / log), **kw)  # fmt: skip


def test_the_baseline_share_is_what_its_span_holds_beyond_eval_time():
    b = sample("baseline", "completion-f32-stamped.stderr", tps=1.0, decode_tps=0.24, span_s=261.312)
    eval_ms = b.metrics.perf.target.eval_ms
    assert baseline_outside(b) == pytest.approx(1 - eval_ms / 261312)
    assert baseline_outside(sample("baseline", "completion-f32.stderr")) is None  # no span: not stamped


def test_the_speculative_share_takes_the_prompt_pass_out_of_the_targets_prompt_eval():
    s = sample("speculative", "spec-simple-draft.stderr", tps=43.3)
    log = s.metrics  # encoded 14 tokens in 0.107 s, decoded 73 in 1.685 s, prompt eval 1018.51 ms
    passes = log.perf.target.prompt_eval_ms + log.perf.target.eval_ms - log.encoded.seconds * 1000
    assert spec_outside(s) == pytest.approx(1 - passes / (log.decoded.seconds * 1000))
    assert 0 < spec_outside(s) < 1
    base = sample("baseline", "completion-f32.stderr", decode_tps=28.26, span_s=2.3)
    fields = span_fields([s], [base])
    assert fields == {
        "baseline_decode_tps": 28.26,
        "baseline_outside": baseline_outside(base),
        "spec_outside": spec_outside(s),
    }
    assert set(span_fields([s], [sample("baseline", "completion-f32.stderr")]).values()) == {None}  # old runs

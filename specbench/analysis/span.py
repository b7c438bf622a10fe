"""How much of each side's generation span lies outside the target's decode step.

Both t/s of a speedup are timed over the same work, from the first generated token to the last
(docs/timing.md). Inside that span llama.cpp times its decode calls itself (``eval time``, and a
speculative run's verification passes counted as ``prompt eval``); the rest is sampling, batch
preparation, the public decode entry, printing and, when speculating, drafting. The report shows
that rest as a share of each side's span, and keeps llama.cpp's own decode-only rate of the
baseline (``baseline_decode_tps``) beside the same-span one.
"""

from __future__ import annotations

import math

from specbench.results.records import Sample


def _mean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return math.fsum(values) / len(values) if values else None


def baseline_outside(s: Sample) -> float | None:
    """Share of a plain run's span outside its decode calls: 1 - eval time / span (the span holds
    exactly the ``eval runs`` decodes)."""
    perf = s.metrics.perf.target if s.metrics and s.metrics.perf else None
    if not s.span_s or perf is None or perf.eval_ms is None:
        return None
    return 1.0 - perf.eval_ms / (s.span_s * 1000.0)


def spec_outside(s: Sample, base: Sample | None) -> float | None:
    """Share of a speculative run's ``decoded`` span outside the target's passes. The target counts
    its verification passes as prompt eval together with the prompt's pass, which is outside the
    span; that pass is estimated from the paired baseline's prompt eval (the same prompt, one token
    more), so the share is an estimate. The draft model's time counts as outside."""
    log = s.metrics
    perf = log.perf.target if log and log.perf else None
    if log is None or perf is None or log.decoded is None or not log.decoded.seconds or base is None:
        return None
    bperf = base.metrics.perf.target if base.metrics and base.metrics.perf else None
    if bperf is None or bperf.prompt_eval_ms is None or not bperf.prompt_eval_tokens:
        return None
    n = bperf.prompt_eval_tokens
    prompt_pass = bperf.prompt_eval_ms * (n - 1) / n
    passes = (perf.prompt_eval_ms or 0.0) + (perf.eval_ms or 0.0) - prompt_pass
    return 1.0 - passes / (log.decoded.seconds * 1000.0)


def span_fields(spec: list[Sample], base: list[Sample]) -> dict[str, float | None]:
    """The report row's ``baseline_decode_tps``, ``baseline_outside`` and ``spec_outside`` (means
    over the cell's usable samples; a speculative sample pairs with the baseline of its prompt
    and repetition)."""
    by_key = {(b.prompt_id, b.repetition, b.build): b for b in base}
    paired = [spec_outside(s, by_key.get((s.prompt_id, s.repetition, s.build))) for s in spec]
    return {
        "baseline_decode_tps": _mean([b.decode_tps for b in base if b.decode_tps is not None]),
        "baseline_outside": _mean([baseline_outside(b) for b in base]),
        "spec_outside": _mean(paired),
    }

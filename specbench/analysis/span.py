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


def _mean(values: list[float | None]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return math.fsum(finite) / len(finite) if finite else None


def share(outside: float) -> float | None:
    """A share of a span, or None when it cannot be one: ``--no-perf`` prints zero (or no) decode
    time, and a log whose timers disagree with the span gives a share below 0 or above 1. Such a
    figure is never shown: it measures nothing."""
    return outside if 0.0 <= outside < 1.0 else None


def baseline_outside(s: Sample) -> float | None:
    """Share of a plain run's span outside its decode calls: 1 - eval time / span (the span holds
    exactly the ``eval runs`` decodes)."""
    perf = s.metrics.perf.target if s.metrics and s.metrics.perf else None
    if s.timings is not None:  # llama-server times the span only: no decode-only timer to set beside it
        return None
    if not s.span_s or perf is None or not perf.eval_ms:
        return None
    return share(1.0 - perf.eval_ms / (s.span_s * 1000.0))


def spec_outside(s: Sample) -> float | None:
    """Share of a speculative run's ``decoded`` span outside the target's passes. The target counts
    its verification passes as prompt eval together with the prompt's own pass, which is outside
    the span; the ``encoded`` line times that pass (with a draft model, the draft's prompt pass
    too, so the passes come out short and the share is an upper bound; without one it is exact up
    to the sampler's and speculator's set-up). Drafting counts as outside."""
    log = s.metrics
    perf = log.perf.target if log and log.perf else None
    if log is None or perf is None or not (log.decoded and log.decoded.seconds) or log.encoded is None:
        return None
    if log.encoded.seconds is None or perf.prompt_eval_ms is None:
        return None
    passes = perf.prompt_eval_ms + (perf.eval_ms or 0.0) - log.encoded.seconds * 1000.0
    if passes <= 0:  # --no-perf: no pass was timed
        return None
    return share(1.0 - passes / (log.decoded.seconds * 1000.0))


def span_fields(spec: list[Sample], base: list[Sample]) -> dict[str, float | None]:
    """The report row's ``baseline_decode_tps``, ``baseline_outside`` and ``spec_outside`` (means
    over the cell's usable samples); the shares only for a run that timed its baselines' spans
    (run folder format 2): older reports stay as they were."""
    if not any(b.span_s for b in base):
        return {"baseline_decode_tps": None, "baseline_outside": None, "spec_outside": None}
    return {
        "baseline_decode_tps": _mean([b.decode_tps for b in base if b.decode_tps is not None]),
        "baseline_outside": _mean([baseline_outside(b) for b in base]),
        "spec_outside": _mean([spec_outside(s) for s in spec]),
    }

"""How much of each side's generation span lies outside the target's decode step.

Both t/s of a speedup are timed over the same span (docs/timing.md); llama.cpp times its decode
calls inside it, and the rest (sampling, batch preparation, printing, drafting) is shown as a share.
"""

from __future__ import annotations

import math

from specbench.results.records import Sample


def _mean(values: list[float | None]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return math.fsum(finite) / len(finite) if finite else None


def share(outside: float) -> float | None:
    """A share of a span, or None when it cannot be one (``--no-perf``, timers that disagree with
    the span): such a figure measures nothing."""
    return outside if 0.0 <= outside < 1.0 else None


def baseline_outside(s: Sample) -> float | None:
    """Share of a plain run's span outside its decode calls: 1 - eval time / span (the span holds
    exactly the ``eval runs`` decodes)."""
    perf = s.metrics.perf.target if s.metrics and s.metrics.perf else None
    # llama-server (timings) times the span only: no decode-only timer to set beside it
    if s.timings is not None or not s.span_s or perf is None or not perf.eval_ms:
        return None
    return share(1.0 - perf.eval_ms / (s.span_s * 1000.0))


def spec_outside(s: Sample) -> float | None:
    """Share of a speculative run's ``decoded`` span outside the target's passes: its prompt eval
    holds the verification passes and the prompt's own pass, which the ``encoded`` line times (with
    a draft model the draft's prompt pass too: then an upper bound). Drafting counts as outside."""
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
    over the cell's usable samples), only for a run that timed its baselines' spans (format 2)."""
    if not any(b.span_s for b in base):
        return {"baseline_decode_tps": None, "baseline_outside": None, "spec_outside": None}
    return {
        "baseline_decode_tps": _mean([b.decode_tps for b in base if b.decode_tps is not None]),
        "baseline_outside": _mean([baseline_outside(b) for b in base]),
        "spec_outside": _mean([spec_outside(s) for s in spec]),
    }

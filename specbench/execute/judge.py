"""One judge for every executor: what a process or a server gave becomes a Sample here, and only here.

An executor reports an ``Outcome``; ``judge`` decides status, validity and its reason and derives the
metrics, so both runners apply the same rules and explain an invalid sample the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specbench.base.llamaopts import AXES
from specbench.base.methods import method_of
from specbench.execute.outputs import (
    continuation,
    generated_text,
    generation_offset,
    output_bytes,
    prompt_over_context,
    sha256_text,
)
from specbench.parse.parsed import SpecCounters
from specbench.parse.process import ParsedLog
from specbench.parse.span import Span, Stamps, first_tokens, plain_span, text_span
from specbench.results.cell import is_synthetic
from specbench.results.records import Measurement, Sample, ServerTimings

if TYPE_CHECKING:
    from specbench.plan.invocation import Invocation


@dataclass
class Outcome:
    """What one invocation gave, before any judgement (filled by an executor, read by ``judge``)."""

    wall_s: float
    error: str | None = None  # nothing to judge, and why: exit status, no answer, a server that did not start
    timed_out: bool = False
    output: str | None = None  # what was generated: a process's stdout, a response's content
    echoed: bool = True  # whether ``output`` starts with the prompt (``Invocation.prompt_echoed``)
    log: ParsedLog | None = None  # the statistics, in the parser's form (a server's timings converted)
    source: str = "output"  # where the statistics came from, for reasons: "output" | "the response timings"
    exit_code: int | None = None
    stdout_path: str | None = None  # relative to the run folder
    stderr_path: str | None = None
    timings: ServerTimings | None = None  # server runner: the response's own timings
    batch_wall_s: float | None = None  # server runner: wall time of the batch in flight together
    counters: SpecCounters | None = None  # server runner: /metrics over the batch (process: in ``log``)
    stdout_times: Stamps | None = None  # process runner: time-stamped stdout reads
    cpu_s: float | None = None  # CPU seconds the measured process got (server: over the batch)
    cache_prompt: bool | None = None  # server runner: the request's cache_prompt as sent


@dataclass
class Measured:
    """A judged invocation: the sample (``outputs_match`` not yet known) and its continuation."""

    sample: Sample
    text: str | None  # the generated continuation, None when the invocation produced none
    generated: str | None = None  # stdout after the prompt's echo, as printed (``capped_span``'s reference)


def finite(x: float | None) -> float | None:
    """llama.cpp can print inf or nan t/s (a zero-length timing); such a number is no measurement."""
    return x if x is not None and math.isfinite(x) else None


def rate(x: float | None) -> float | None:
    """A t/s that measures something: finite and above zero (``0.00 t/s`` is a timer that never ran,
    as with ``--no-perf``, not a speed)."""
    x = finite(x)
    return x if x is not None and x > 0 else None


def tokens_per_pass(n_generated: int | None, n_accept: int | None) -> float | None:
    """Tokens per target pass: each pass yields its accepted draft tokens plus one of its own."""
    if n_generated is None or n_accept is None or n_generated - n_accept <= 0:
        return None
    return n_generated / (n_generated - n_accept)


def derive_metrics(
    role: str, log: ParsedLog, span: Span | None = None, capped: Span | None = None
) -> tuple[float | None, float | None, float | None, int | None]:
    """(t/s over the generation span, acceptance, tokens per target pass, tokens generated).

    Both sides are timed over the same work, first generated token to last (docs/timing.md): a
    speculative run by its ``decoded`` line (or over its first ``n_predict`` tokens: ``capped``), a
    plain run by the ``span`` of its time-stamped stdout. Tokens generated = eval runs + the token
    sampled from the prompt pass, the count ``n_predict`` gives for speculative runs.
    """
    if role == "speculative":
        tps = capped.tps if capped else (log.decoded.tps if log.decoded else None)
        n_gen = log.n_predict if log.n_predict is not None else (log.decoded.tokens if log.decoded else None)
        accepted = log.n_accept / log.n_drafted if log.n_drafted and log.n_accept is not None else None
        tpp = tokens_per_pass(log.n_predict, log.n_accept)
        return rate(tps), finite(accepted), finite(tpp), n_gen
    perf = log.perf.target if log.perf else None
    n_gen = perf.eval_runs + 1 if perf and perf.eval_runs is not None else None
    return rate(span.tps if span else None), None, None, n_gen


def capped_span(inv: Invocation, out: Outcome, reference: str | None = None) -> Span | None:
    """A speculative run that went past ``cap`` (the requested ``n_predict``), timed over its first
    ``cap`` tokens: from its step log (``parse.span.first_tokens``), else from its stamped stdout cut
    where ``reference`` (the baseline's stdout after the prompt, at temperature 0) ends
    (``parse.span.text_span``). None when it did not go past, or neither cuts it exactly: then its
    ``decoded`` line is the rate, and ``timed_tokens`` says what it covers."""
    log, cap = out.log, inv.generation.n_predict
    d = log.decoded if log and inv.role == "speculative" else None
    if not cap or d is None or not d.tokens or d.tokens <= cap or not d.seconds:
        return None
    if log and log.steps:
        return first_tokens(log.steps, d.tokens, d.seconds, cap)
    if not reference or not out.output:
        return None
    offset = generation_offset(out.output, inv.prompt_text, out.echoed)
    if offset is None:
        return None
    generated = output_bytes(out.output)[offset:]
    return text_span(out.stdout_times, offset, generated, output_bytes(reference), cap)


def timed_tokens(role: str, log: ParsedLog | None, span: Span | None, capped: Span | None) -> int | None:
    """How many generated tokens a sample's t/s was taken over (both sides of a speedup must match)."""
    if log is None:
        return None
    if role == "speculative":
        return capped.tokens if capped else (log.decoded.tokens if log.decoded else None)
    return span.tokens if span else None


def decode_only_tps(role: str, log: ParsedLog | None) -> float | None:
    """llama.cpp's own decode-only rate, kept beside the same-span one: a plain run's ``eval time``
    t/s. A speculative run's target counts its verification passes as prompt eval, so it prints no
    such rate (1 eval run, inf t/s): None there unless a real one is printed."""
    perf = log.perf.target if log and log.perf else None
    if perf is None or (role == "speculative" and (perf.eval_runs or 0) <= 1):
        return None
    return finite(perf.eval_tps)


def sample_span(inv: Invocation, out: Outcome) -> Span | None:
    """The same-span timing of a plain run: its stdout stamps from the first generated byte; for
    the server runner, ``predicted_ms`` (first token, from the prompt pass, to the last)."""
    log = out.log
    if inv.role == "speculative":
        return None
    if out.timings is not None:
        n, ms = out.timings.predicted_n, out.timings.predicted_ms
        return Span(n - 1, ms / 1000, before=1) if n and n > 1 and ms and ms > 0 else None
    if not out.stdout_times or out.output is None or log is None:
        return None
    perf = log.perf.target if log.perf else None
    offset = generation_offset(out.output, inv.prompt_text, echoed=out.echoed)
    return plain_span(out.stdout_times, offset, perf.eval_runs if perf else None)


def never_drafted_reason(inv: Invocation, log: ParsedLog) -> str:
    """Why a speculative run drafted nothing, and what to change: for n-gram lookups, which of
    llama.cpp's conditions (common/ngram-map.cpp) it failed; for a draft model, what cuts drafts."""
    reason = "speculation never engaged (n_drafted = 0)"
    defaults = method_of(inv.method).ngram_sizes  # an n-gram lookup that drafts only after a repeat
    if defaults is None:
        cutting = [o for o in AXES if o.cuts and getattr(inv, o.key)]  # p_min, draft_min
        cuts = [f"{o.key}={getattr(inv, o.key):g} {o.cuts}" for o in cutting]
        if not cuts:
            return reason
        lower = " ".join(f"--set sweep.{o.key}=[{', '.join(map(str, o.sweep))}]" for o in cutting)
        return f"{reason}: {'; '.join(cuts)}; try lower values ({lower})"
    n = inv.ngram_size_n or defaults[0]
    m = inv.ngram_size_m or defaults[1]
    history = (log.encoded.tokens if log.encoded and log.encoded.tokens else 0) + (log.n_predict or 0)
    if history <= n + m + 1:
        why = f"only {history} tokens of history, it needs more than size_n + size_m + 1 = {n + m + 1}"
    else:
        why = (
            f"no earlier occurrence of the last {n} tokens, or output looping with a period of at most "
            f"{n} tokens (the most recent match is then the loop itself)"
        )
    what = f"{inv.method} drafts only after a repeat of the last size_n={n} tokens"
    return f"{reason}: {what}; {why}; try --set sweep.ngram_size_n=[3,4]"


def prompt_tokens(log: ParsedLog) -> int | None:
    """The prompt's tokens: a speculative run's ``encoded`` line, else the target's prompt eval."""
    if log.encoded is not None and log.encoded.tokens is not None:
        return log.encoded.tokens
    perf = log.perf.target if log.perf else None
    return perf.prompt_eval_tokens if perf else None


def prefill(log: ParsedLog | None, timings: ServerTimings | None) -> tuple[int | None, float | None]:
    """(prompt tokens, prefill seconds) of a sample: the server's prompt_n/prompt_ms, a speculative
    run's ``encoded`` line, else the target's ``prompt eval``."""
    if timings is not None and timings.prompt_ms is not None:
        return timings.prompt_n, finite(timings.prompt_ms / 1000)
    if log is None:
        return None, None
    if log.encoded is not None and log.encoded.seconds is not None:
        return log.encoded.tokens, finite(log.encoded.seconds)
    perf = log.perf.target if log.perf else None
    if perf is None or perf.prompt_eval_ms is None:
        return prompt_tokens(log), None
    return perf.prompt_eval_tokens, finite(perf.prompt_eval_ms / 1000)


# A model whose first token ends its answer: nothing decoded to time (seen: the SmolLM2 Q4_1 draft
# alone on ik_llama.cpp 0.1.5, whose CPU Q4_1 path makes <|im_end|> its first token, issue 59)
ENDED_AT_ONCE = (
    "generated no text: its first token ended the answer (end of generation), so no decode was timed; "
    "try the model on another prompt, or on another build if that one answers"
)


def _status(
    inv: Invocation, out: Outcome, span: Span | None, capped: Span | None
) -> tuple[str, str | None, tuple]:
    """(status, reason, (tps, acceptance, tokens per pass, tokens generated))."""
    none = (None, None, None, None)
    log = out.log
    if out.error is not None:
        return ("timeout" if out.timed_out else "failed"), out.error, none
    if out.output is None:
        return "failed", f"no generated text in {out.source}", none
    if log is None:
        return "failed", f"no statistics in {out.source}", none
    metrics = derive_metrics(inv.role, log, span, capped)
    if inv.role == "speculative" and log.kind != "speculative":
        return "failed", f"no speculative statistics in {out.source}", metrics
    ctx = inv.generation.ctx_size  # 0: the model's own context, which llama.cpp checks itself
    too_long = prompt_over_context(prompt_tokens(log), ctx) if ctx else None
    if too_long:  # the process runner's binaries fail such a prompt; llama-server would round ctx up
        return "failed", too_long, metrics
    if inv.role == "speculative" and not log.n_drafted:
        return "invalid", never_drafted_reason(inv, log), metrics
    if metrics[0] is None and inv.role != "speculative":  # a plain run without a speed: say why
        if continuation(out.output, inv.prompt_text, echoed=out.echoed) == "":  # e.g. ik_llama.cpp's Q4_1
            return "failed", f"{inv.model} {ENDED_AT_ONCE}", metrics
        if out.timings is None:
            return "failed", f"no generation span in {out.source} (its stdout was not time-stamped)", metrics
    if metrics[0] is None:
        return "failed", f"no decode speed in {out.source}", metrics
    return "ok", None, metrics


def judge(
    inv: Invocation, out: Outcome, run_id: str, started_at: str, reference: str | None = None
) -> Measured:
    """The sample of one invocation: status and reason, metrics, the continuation. ``reference``: a
    speculative run's baseline text at temperature 0, where a program without a step log is cut."""
    span = sample_span(inv, out)
    capped = capped_span(inv, out, reference)
    status, reason, (tps, acc, tpp, n_gen) = _status(inv, out, span, capped)
    # the server's /metrics over the batch, or the process's own -lv 5 statistics line
    counters = out.counters or (out.log.spec_counters if out.log else None)
    text = generated = None
    if status in ("ok", "invalid") and out.output is not None:
        text = continuation(out.output, inv.prompt_text, echoed=out.echoed)
        generated = generated_text(out.output, inv.prompt_text, out.echoed)
    n_prompt, prefill_s = prefill(out.log, out.timings)
    sample = Sample(
        **inv.model_dump(include=set(Measurement.model_fields)),
        run_id=run_id, status=status, valid=status == "ok", invalid_reason=reason, metrics=out.log, tps=tps,
        acceptance=acc, tokens_per_pass=tpp, n_generated=n_gen,
        output_sha256=sha256_text(text) if text is not None else None, exit_code=out.exit_code,
        wall_s=round(out.wall_s, 4), cmd=list(inv.argv), stdout_path=out.stdout_path,
        stderr_path=out.stderr_path, started_at=started_at, timings=out.timings,
        ttft_ms=finite(out.timings.prompt_ms) if out.timings else None, batch=inv.batch,
        batch_wall_s=round(out.batch_wall_s, 4) if out.batch_wall_s is not None else None,
        spec_counters=counters, synthetic=is_synthetic(inv),
        decode_tps=decode_only_tps(inv.role, out.log) if out.timings is None else None,
        span_s=round(span.seconds, 6) if span else None, prompt_tokens=n_prompt,
        prefill_s=round(prefill_s, 6) if prefill_s is not None else None,
        timed_tokens=timed_tokens(inv.role, out.log, span, capped) if status == "ok" else None,
        server_cache_prompt=out.cache_prompt,
    )  # fmt: skip
    return Measured(sample, text, generated)

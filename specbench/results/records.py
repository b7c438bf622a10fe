"""What one measurement is and what it produced: the records a run folder stores (no file I/O here)."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from specbench.parse.parsed import SpecCounters
from specbench.parse.process import ParsedLog
from specbench.results import cell
from specbench.results.cell import Cell


class Generation(BaseModel):
    """Generation settings shared by every invocation of a run (part of what defines a cell)."""

    n_predict: int = 128
    temperature: float = 0.0
    top_k: int | None = None
    seed: int = 42
    threads: int | None = None
    ctx_size: int = 2048


class ServerTimings(BaseModel):
    """llama-server's per-request ``timings`` (draft_n / draft_n_accepted only when it drafted)."""

    model_config = ConfigDict(extra="allow")  # a newer server's extra fields are kept, not refused

    cache_n: int | None = None
    prompt_n: int | None = None
    prompt_ms: float | None = None
    prompt_per_token_ms: float | None = None
    prompt_per_second: float | None = None
    predicted_n: int | None = None
    predicted_ms: float | None = None
    predicted_per_token_ms: float | None = None
    predicted_per_second: float | None = None
    draft_n: int | None = None
    draft_n_accepted: int | None = None


class Measurement(Cell):
    """What one invocation measures: the identity a planned Invocation and its stored Sample share."""

    role: str  # baseline (target alone) | draft (alone, for the cost ratio) | speculative
    prompt_id: str
    category: str
    repetition: int  # 0-based; warmups are never stored
    generation: Generation
    # provenance, not identity: whether the draft sampled on the backend (the cell's value, else the
    # binary's default); None: no draft context, or a build without the option
    draft_backend_sampling: bool | None = None
    server_ram_cache: str | None = None  # server: RAM prompt cache "off" (--cache-ram 0) or "absent"

    def sample_key(self) -> tuple:
        """Identity within a run (--resume skips finished samples)."""
        return cell.sample_key(self)


class Sample(Measurement):
    """One finished invocation of a llama.cpp binary (one line of the run folder's sample log)."""

    run_id: str
    status: str  # ok | failed | timeout | invalid
    valid: bool
    invalid_reason: str | None = None
    metrics: ParsedLog | None = None
    tps: float | None = None  # over the generation span, both sides alike (docs/timing.md)
    decode_tps: float | None = None  # llama.cpp's decode-only rate: a plain run's `eval time` t/s
    span_s: float | None = None  # a plain run: seconds from its first generated token to its last
    timed_tokens: int | None = None  # the generated tokens its t/s covers (execute.judge.capped_span)
    acceptance: float | None = None  # n_accept / n_drafted
    tokens_per_pass: float | None = None  # n_predict / (n_predict - n_accept)
    n_generated: int | None = None
    # the prompt's pass, outside the timed span: tokens in the KV cache at the start, prefill seconds
    prompt_tokens: int | None = None
    prefill_s: float | None = None
    outputs_match: bool | None = None  # vs the baseline continuation (temperature 0 only)
    first_diff: int | None = None  # first differing character of the continuation
    output_sha256: str | None = None
    exit_code: int | None = None
    wall_s: float
    cmd: list[str] = Field(default_factory=list)
    stdout_path: str | None = None  # relative to the run folder
    stderr_path: str | None = None
    started_at: str
    # server runner: the response's `timings`, time to first token, the batch in flight with it
    timings: ServerTimings | None = None
    ttft_ms: float | None = None
    batch: int | None = None
    batch_wall_s: float | None = None
    server_cache_prompt: bool | None = None  # as sent (true where the build drafts only with it)
    spec_counters: SpecCounters | None = None  # server: /metrics' draft counters over the batch (count once)
    synthetic: bool = False  # synth_len set: drafts accepted at random, the output is not valid
    # the CPU its process got (machine/contention.py): CPU seconds, threads, the load as it ended, and
    # how often its pair was measured again for want of its share of the CPU
    cpu_s: float | None = None
    cpu_threads: int | None = None
    load_1m: float | None = None
    reruns: int = 0

    @property
    def usable(self) -> bool:
        """Valid, ok and timed: a sample the statistics use."""
        return self.valid and self.status == "ok" and self.tps is not None


# A stored sample's own figures (a hand-edited log may hold NaN or negatives; ``metrics`` may be inf
# or nan as llama.cpp printed them, and are not checked as figures).
_FIGURES = ("tps", "decode_tps", "span_s", "acceptance", "tokens_per_pass", "wall_s", "ttft_ms",
            "batch_wall_s", "cpu_s", "load_1m")  # fmt: skip
_COUNTS = ("repetition", "n_generated", "timed_tokens", "batch", "cpu_threads", "reruns")


def impossible(sample: Sample) -> tuple[str | None, dict]:
    """Why ``sample`` cannot have been measured (None: it can), and the update that clears its
    non-finite figures; ``load_samples`` applies it to every sample it reads."""
    problems: list[str] = []
    clear: dict = {}
    for name in _FIGURES:
        value = getattr(sample, name)
        if value is None:
            continue
        if not math.isfinite(value):
            problems.append(f"{name} is {value}")
            clear[name] = 0.0 if name == "wall_s" else None  # wall_s is required
        elif value < 0:
            problems.append(f"{name} is negative ({value:g})")
    for name in _COUNTS:
        value = getattr(sample, name)
        if value is not None and value < 0:
            problems.append(f"{name} is negative ({value})")
    if sample.valid and sample.tps is not None and math.isfinite(sample.tps) and sample.tps == 0:
        problems.append("a valid sample at 0 t/s")
    if sample.span_s is not None and sample.span_s <= 0 and (sample.timed_tokens or 0) > 0:
        problems.append(f"{sample.timed_tokens} tokens in a span of {sample.span_s:g} s")
    if sample.acceptance is not None and sample.acceptance > 1:
        problems.append(f"acceptance above 1 ({sample.acceptance:g})")
    if sample.tokens_per_pass is not None and sample.tokens_per_pass < 1 - 1e-9:
        problems.append(f"tokens_per_pass below 1 ({sample.tokens_per_pass:g})")
    problems += _counter_problems(sample)
    return ("; ".join(problems) or None), clear


def _counter_problems(sample: Sample) -> list[str]:
    """Draft counters that no run prints: negative, or more tokens accepted than drafted."""
    out: list[str] = []
    pairs = []
    m = sample.metrics
    if m is not None:
        out += [f"metrics.{k} is negative ({v})" for k in ("n_draft", "n_predict", "n_drafted", "n_accept")
                if (v := getattr(m, k)) is not None and v < 0]  # fmt: skip
        if m.accept is not None and math.isfinite(m.accept) and not 0 <= m.accept <= 1:
            out.append(f"metrics.accept outside 0..1 ({m.accept:g})")
        pairs.append(("metrics", m.n_accept, m.n_drafted))
    c = sample.spec_counters
    if c is not None:
        out += [f"spec_counters.{k} is negative ({v})" for k in ("steps", "drafted", "accepted")
                if (v := getattr(c, k)) < 0]  # fmt: skip
        pairs.append(("spec_counters", c.accepted, c.drafted))
    t = sample.timings
    if t is not None:
        out += [f"timings.{k} is negative ({v})" for k in ("cache_n", "prompt_n", "predicted_n", "draft_n",
                "draft_n_accepted") if (v := getattr(t, k)) is not None and v < 0]  # fmt: skip
        pairs.append(("timings", t.draft_n_accepted, t.draft_n))
    for where, accepted, drafted in pairs:
        if accepted is not None and drafted is not None and accepted > drafted >= 0:
            out.append(f"{where}: {accepted} tokens accepted of {drafted} drafted")
    return out

"""What parsing a llama.cpp log gives: pure data, shared by the process-log parser (``parse``) and
the server-log parser (``parse_server``), so it sits below both."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# inf/nan are real values llama.cpp prints (e.g. target eval t/s of a speculative run); keep them in JSON.
_JSON_CONFIG = ConfigDict(ser_json_inf_nan="constants")


class Throughput(BaseModel):
    """An ``encoded``/``decoded`` line: N tokens in S seconds, X t/s."""

    model_config = _JSON_CONFIG

    tokens: int | None = None
    seconds: float | None = None
    tps: float | None = None


class Perf(BaseModel):
    """One model's perf block (``llama_print_timings`` / ``llama_perf_*`` / ``common_perf_print``)."""

    model_config = _JSON_CONFIG

    load_ms: float | None = None
    sample_ms: float | None = None
    sample_runs: int | None = None
    prompt_eval_ms: float | None = None
    prompt_eval_tokens: int | None = None
    prompt_eval_tps: float | None = None
    eval_ms: float | None = None
    eval_runs: int | None = None
    eval_tps: float | None = None
    total_ms: float | None = None
    total_tokens: int | None = None


class PerfBlocks(BaseModel):
    target: Perf | None = None
    draft: Perf | None = None


class ParsedLog(BaseModel):
    """What one log really contains; absent values stay None and are omitted from JSON."""

    model_config = _JSON_CONFIG

    file: str | None = None
    kind: str  # "speculative" | "completion"
    encoded: Throughput | None = None
    decoded: Throughput | None = None
    n_draft: int | None = None
    n_predict: int | None = None
    n_drafted: int | None = None
    n_accept: int | None = None
    accept: float | None = None  # fraction, printed percentage / 100
    perf: PerfBlocks | None = None

    def to_json(self) -> dict:
        return self.model_dump(exclude_none=True)

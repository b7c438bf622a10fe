"""What parsing a llama.cpp log gives: pure data, shared by the process-log and server-log parsers."""

from __future__ import annotations

import math
from itertools import zip_longest

from pydantic import BaseModel, ConfigDict, Field, model_serializer


class _Printed(BaseModel):
    """Numbers as llama.cpp printed them, ``inf`` and ``nan`` included (a speculative run's target
    prints ``inf`` eval t/s over its one eval run): the parser reports the text. Written as JSON,
    such a number is ``null`` and its field is named in ``not_finite``, so every file specbench
    writes stays strict JSON (``JSON.parse`` refuses ``Infinity``) and keeps the reason."""

    model_config = ConfigDict(ser_json_inf_nan="null")

    not_finite: list[str] | None = None  # in JSON: the fields llama.cpp printed as inf or nan

    @model_serializer(mode="wrap")
    def _name_the_gaps(self, handler, info):
        data = handler(self)
        if info.mode_is_json():
            bad = [
                name
                for name in type(self).model_fields
                if isinstance(v := getattr(self, name), float) and not math.isfinite(v)
            ]
            if bad:
                data["not_finite"] = sorted({*(self.not_finite or []), *bad})
        return data


class Throughput(_Printed):
    """An ``encoded``/``decoded`` line: N tokens in S seconds, X t/s."""

    tokens: int | None = None
    seconds: float | None = None
    tps: float | None = None


class Perf(_Printed):
    """One model's perf block (``llama_print_timings`` / ``llama_perf_*`` / ``common_perf_print``)."""

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


class SpecCounters(BaseModel):
    """llama-server's speculative counters (``/metrics``), or the difference of two readings.

    ``steps``: verification steps (``spec_decode_num_drafts_total``), ``drafted`` and ``accepted``
    tokens, and ``accepted_per_pos[i]``: the steps that accepted the draft's token at position i.
    """

    steps: int = 0
    drafted: int = 0
    accepted: int = 0
    accepted_per_pos: list[int] = []

    def minus(self, before: SpecCounters) -> SpecCounters:
        """What happened between reading ``before`` and this reading."""
        return self.plus(before, sign=-1)

    def plus(self, other: SpecCounters, sign: int = 1) -> SpecCounters:
        pos = zip_longest(self.accepted_per_pos, other.accepted_per_pos, fillvalue=0)
        return SpecCounters(
            steps=self.steps + sign * other.steps,
            drafted=self.drafted + sign * other.drafted,
            accepted=self.accepted + sign * other.accepted,
            accepted_per_pos=[a + sign * b for a, b in pos],
        )

    def accept_len(self) -> float | None:
        """Mean tokens a verification step yields: accepted drafts per step + the target's own token."""
        return self.accepted / self.steps + 1.0 if self.steps > 0 else None

    def accept_by_pos(self) -> list[float] | None:
        """Per draft position, the share of steps that accepted the token there."""
        return [n / self.steps for n in self.accepted_per_pos] if self.steps > 0 else None


class ParsedLog(_Printed):
    """What one log really contains; absent values stay None and are omitted from JSON."""

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
    # llama-speculative-simple's steps at -lv 5 (``accepted A/D draft tokens``): (seconds since
    # start, tokens committed = A + 1), for parse.span.first_tokens; recomputable, so not in JSON
    steps: list[tuple[float, int]] | None = Field(default=None, exclude=True)
    # its -lv 5 `statistics` lines summed: acceptance by draft position, as /metrics gives the server
    spec_counters: SpecCounters | None = Field(default=None, exclude=True)

    def to_json(self) -> dict:
        return self.model_dump(exclude_none=True)

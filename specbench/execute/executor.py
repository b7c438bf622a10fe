"""The executor seam: how one planned invocation becomes a finished measurement.

The runner loop owns order, resume, progress and the results folder; an executor only turns an
``Invocation`` into a ``Measured`` (a Sample without its output check, plus the generated text).
``ProcessExecutor`` runs one llama.cpp process per invocation; another executor (a long-lived
llama-server) plugs in the same way without the loop, the store or the report knowing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from specbench.errors import ParseError
from specbench.execute.outputs import continuation, decode_output, failure_reason, sha256_text
from specbench.execute.process import ProcessResult, run_command
from specbench.parse import ParsedLog, parse_text
from specbench.results.folder import raw_paths
from specbench.results.records import Measurement, Sample

if TYPE_CHECKING:
    from specbench.plan.invocation import Invocation

_MAX_LOG_READ = 8 << 20  # stdout/stderr beyond this are not parsed (a runaway log is a failure anyway)


@dataclass
class Measured:
    """An executor's result: the sample (``outputs_match`` not yet judged) and the continuation."""

    sample: Sample
    text: str | None  # the generated continuation, None when the invocation produced none


class Executor(Protocol):
    """Turns planned invocations into measurements; ``close`` releases what it holds (servers).

    ``measure_batch`` gets invocations meant to be in flight together (a server runner's ``parallel``
    requests, ``(plan index, invocation)`` pairs) and returns their measurements in order.
    ``model_loads`` counts the llama.cpp processes it started that loaded a model, warmups included.
    """

    model_loads: int

    def measure(
        self, inv: Invocation, index: int, run_dir: Path, run_id: str, started_at: str
    ) -> Measured: ...

    def measure_batch(
        self, batch: list[tuple[int, Invocation]], run_dir: Path, run_id: str, started_at: str
    ) -> list[Measured]: ...

    def close(self) -> None: ...


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:60]


def raw_stem(index: int, inv: Invocation) -> str:
    """``<n>-<role>[-<build>]-<model>-<method>-<draft_max>-<prompt>-r<rep>`` (warmups say so)."""
    role = "warmup" if inv.warmup else inv.role
    parts = [f"{index:04d}", role, *([inv.build] if inv.build else []), inv.model]
    if inv.role == "speculative":
        parts += [inv.draft or inv.method] + ([f"n{inv.draft_max}"] if inv.draft_max is not None else [])
    parts += [inv.prompt_id, f"r{inv.repetition}"]
    return _slug("-".join(str(p) for p in parts))


def read_log(path: Path) -> str:
    with open(path, "rb") as fh:
        return fh.read(_MAX_LOG_READ).decode("utf-8", errors="replace")


def read_output(path: Path) -> str:
    """stdout, the generated text, byte-exact (see ``outputs.decode_output``)."""
    with open(path, "rb") as fh:
        return decode_output(fh.read(_MAX_LOG_READ))


def derive_metrics(role: str, log: ParsedLog) -> tuple[float | None, float | None, float | None, int | None]:
    """(decode t/s, acceptance, tokens per target pass, tokens generated) from a parsed log.

    Speculative: the ``decoded`` line (the target's eval line counts only non-verification
    passes). Baseline/draft: the target's ``eval`` t/s; tokens generated = eval runs + the token
    sampled from the prompt pass, the same count ``n_predict`` gives for speculative runs.
    """
    if role == "speculative":
        tps = log.decoded.tps if log.decoded else None
        acceptance = log.n_accept / log.n_drafted if log.n_drafted and log.n_accept is not None else None
        tpp = None
        if log.n_predict is not None and log.n_accept is not None and log.n_predict - log.n_accept > 0:
            tpp = log.n_predict / (log.n_predict - log.n_accept)
        n_gen = log.n_predict if log.n_predict is not None else (log.decoded.tokens if log.decoded else None)
        return tps, acceptance, tpp, n_gen
    perf = log.perf.target if log.perf else None
    tps = perf.eval_tps if perf else None
    n_gen = perf.eval_runs + 1 if perf and perf.eval_runs is not None else None
    return tps, None, None, n_gen


def finite(x: float | None) -> float | None:
    return x if x is not None and x == x and abs(x) != float("inf") else None


def _parse(stderr: str, stdout: str, name: str) -> ParsedLog | None:
    """Statistics are on stderr; stdout (generated text, which could say anything) only as a
    fallback, for builds that print them there."""
    for text in (stderr, stderr + "\n" + stdout):
        try:
            return parse_text(text, file=name)
        except ParseError:
            continue
    return None


NGRAM_DEFAULT_SIZES = {"ngram-simple": (12, 48), "ngram-map-k": (12, 48), "ngram-map-k4v": (12, 48)}


def never_drafted_reason(inv: Invocation, log: ParsedLog) -> str:
    """Why a speculative run drafted nothing; for n-gram lookups, which of llama.cpp's conditions
    (common/ngram-map.cpp) it failed and what to change."""
    reason = "speculation never engaged (n_drafted = 0)"
    defaults = NGRAM_DEFAULT_SIZES.get(inv.method)
    if defaults is None:
        return reason
    n = inv.ngram_size_n or defaults[0]
    m = inv.ngram_size_m or defaults[1]
    history = (log.encoded.tokens if log.encoded else 0) + (log.n_predict or 0)
    if history <= n + m + 1:
        why = f"only {history} tokens of history, it needs more than size_n + size_m + 1 = {n + m + 1}"
    else:
        why = (
            f"no earlier occurrence of the last {n} tokens, or output looping with a period of at most "
            f"{n} tokens (the most recent match is then the loop itself)"
        )
    what = f"{inv.method} drafts only after a repeat of the last size_n={n} tokens"
    return f"{reason}: {what}; {why}; try --set sweep.ngram_size_n=[3,4]"


def judge_process(
    inv: Invocation, res: ProcessResult, run_id: str, run_dir: Path, started_at: str
) -> Measured:
    """One finished process: status, validity and reason, metrics, the continuation."""
    stdout, stderr = read_output(res.stdout_path), read_log(res.stderr_path)
    status, reason, log = "ok", None, None
    tps = acceptance = tpp = None
    n_gen = None
    if res.timed_out:
        status, reason = "timeout", f"timed out after {inv.timeout_s:g} s (process group killed)"
    elif res.exit_code != 0:
        status, reason = "failed", failure_reason(stderr, res.exit_code, res.signal)
    if status == "ok" or res.exit_code not in (None, 0):
        log = _parse(stderr, stdout, str(res.stderr_path.relative_to(run_dir)))
        if log is None and status == "ok":
            status, reason = "failed", "no statistics in output"
    if log is not None and status == "ok":
        tps, acceptance, tpp, n_gen = derive_metrics(inv.role, log)
        tps, acceptance, tpp = finite(tps), finite(acceptance), finite(tpp)
        if inv.role == "speculative" and log.kind != "speculative":
            status, reason = "failed", "no speculative statistics in output"
        elif inv.role == "speculative" and not log.n_drafted:
            status, reason = "invalid", never_drafted_reason(inv, log)
        elif tps is None:
            status, reason = "failed", "no decode speed in the statistics"
    text = (
        continuation(stdout, inv.prompt_text, echoed=inv.prompt_echoed)
        if status in ("ok", "invalid")
        else None
    )
    sample = Sample(
        **inv.model_dump(include=set(Measurement.model_fields)),
        run_id=run_id, status=status, valid=status == "ok", invalid_reason=reason, metrics=log, tps=tps,
        acceptance=acceptance, tokens_per_pass=tpp, n_generated=n_gen,
        output_sha256=sha256_text(text) if text is not None else None,
        exit_code=res.exit_code if res.exit_code is not None else None, wall_s=round(res.wall_s, 4),
        cmd=list(inv.argv), stdout_path=str(res.stdout_path.relative_to(run_dir)),
        stderr_path=str(res.stderr_path.relative_to(run_dir)), started_at=started_at,
    )  # fmt: skip
    return Measured(sample, text)


class ProcessExecutor:
    """One llama.cpp process per invocation: stdout/stderr to raw logs, statistics parsed from them."""

    def __init__(self) -> None:
        self.model_loads = 0

    def measure(self, inv: Invocation, index: int, run_dir: Path, run_id: str, started_at: str) -> Measured:
        stdout_path, stderr_path = raw_paths(run_dir, raw_stem(index, inv))
        self.model_loads += 1
        res = run_command(list(inv.argv), stdout_path, stderr_path, timeout_s=inv.timeout_s)
        return judge_process(inv, res, run_id, run_dir, started_at)

    def measure_batch(
        self, batch: list[tuple[int, Invocation]], run_dir: Path, run_id: str, started_at: str
    ) -> list[Measured]:
        """Processes run one at a time (the config refuses parallel > 1 for this runner)."""
        return [self.measure(inv, index, run_dir, run_id, started_at) for index, inv in batch]

    def close(self) -> None:
        pass

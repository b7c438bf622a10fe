"""The server runner's executor: one llama-server per server setting, requests instead of processes.

The plan orders invocations so that every request of a setting (same ``argv``) comes in a row;
the executor starts a server when the setting changes (stopping the previous one's whole process
group), checks on ``/slots`` that a speculative server really speculates, sends ``warmup``
discarded requests, then answers each batch of invocations with requests that are in flight
together. A setting whose server cannot start (load failure, port, timeout) or does not speculate
fails every one of its samples with that reason, without reloading for each of them.
"""

from __future__ import annotations

import json
import math
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.execute.executor import Measured, raw_stem
from specbench.execute.outputs import continuation, prompt_over_context, sha256_text
from specbench.execute.server import Reply, RunningServer, ServerError, post, speculative_slots, start_server
from specbench.parse import ParsedLog, Throughput
from specbench.results.folder import response_paths, server_log_paths, write_raw
from specbench.results.records import Measurement, Sample, ServerTimings

if TYPE_CHECKING:
    from specbench.plan.invocation import Invocation

NO_SPECULATION = (
    "llama-server runs without speculation (/slots says so: the draft model or method failed to "
    "initialise; see the server's log)"
)


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


class ServerExecutor:
    """Measures invocations as requests to a long-lived llama-server (see the module docstring)."""

    def __init__(self, warmup: int = 1):
        self.warmup = warmup
        self.model_loads = 0  # llama-server processes started (each loads its models), warmups included
        self._server: RunningServer | None = None
        self._server_build: str | None = None  # whose server it is: each build gets its own start
        self._failed: dict[tuple[str | None, ...], str] = {}  # (build, *argv) -> why it cannot be measured

    def measure(self, inv: Invocation, index: int, run_dir: Path, run_id: str, started_at: str) -> Measured:
        return self.measure_batch([(index, inv)], run_dir, run_id, started_at)[0]

    def measure_batch(
        self, batch: list[tuple[int, Invocation]], run_dir: Path, run_id: str, started_at: str
    ) -> list[Measured]:
        """Send the batch's requests at once (one per slot) and judge each response."""
        first_index, first = batch[0]
        reason = self._ensure_server(first, first_index, run_dir)
        if reason is not None:
            return [self._failed_sample(inv, run_id, started_at, reason, None) for _, inv in batch]
        server = self._server
        assert server is not None
        pool = ThreadPoolExecutor(max_workers=len(batch))
        try:
            start = time.monotonic()
            bodies = [(inv.request.body(), inv.timeout_s) for _, inv in batch]
            futures = [pool.submit(post, server, "/completion", body, t) for body, t in bodies]
            replies = [f.result() for f in futures]
            batch_wall = time.monotonic() - start
        except BaseException:  # Ctrl-C: the server dies first, so the requests in flight end at once
            self.close()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        out = [
            self._judge(inv, index, reply, server, run_dir, run_id, started_at, batch_wall)
            for (index, inv), reply in zip(batch, replies, strict=True)
        ]
        if any(r.timed_out for r in replies) or not server.alive():
            self._stop()  # a hung or dead server is not asked again; the next batch starts a fresh one
        return out

    def close(self) -> None:
        self._stop()

    # --- the server of the current setting ------------------------------------------------------

    def _stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def _ensure_server(self, inv: Invocation, index: int, run_dir: Path) -> str | None:
        """The running server for ``inv``'s setting (started and warmed up if needed), or why not."""
        key = (inv.build, *inv.argv)  # two labels of one binary (an A/A run) still get a server each
        if key in self._failed:
            return self._failed[key]
        if (
            self._server is not None
            and (self._server_build, self._server.argv) == (inv.build, inv.argv)
            and self._server.alive()
        ):
            return None
        self._stop()
        out, err = server_log_paths(run_dir, raw_stem(index, inv))
        self.model_loads += 1
        try:
            server = start_server(list(inv.argv), out, err, timeout_s=inv.timeout_s)
        except ServerError as exc:
            self._failed[key] = str(exc)
            return str(exc)
        self._server, self._server_build = server, inv.build
        if inv.role == "speculative" and speculative_slots(server) is False:
            self._failed[key] = NO_SPECULATION
            self._stop()
            return NO_SPECULATION
        for _ in range(self.warmup):
            reply = post(server, "/completion", inv.request.body(), inv.timeout_s)
            if reply.error is not None:
                reason = f"warmup request failed: {reply.error}"
                self._stop()
                if reply.timed_out:
                    self._failed[key] = reason
                return reason
        return None

    # --- judging ------------------------------------------------------------------------------

    def _failed_sample(
        self, inv: Invocation, run_id: str, started_at: str, reason: str, reply: Reply | None,
        status: str = "failed", stderr_path: str | None = None,
    ) -> Measured:  # fmt: skip
        sample = Sample(
            **inv.model_dump(include=set(Measurement.model_fields)), run_id=run_id, status=status,
            valid=False, invalid_reason=reason, wall_s=round(reply.wall_s, 4) if reply else 0.0,
            cmd=list(inv.argv), stderr_path=stderr_path, started_at=started_at, batch=inv.batch,
        )  # fmt: skip
        return Measured(sample, None)

    def _judge(
        self, inv: Invocation, index: int, reply: Reply, server: RunningServer, run_dir: Path,
        run_id: str, started_at: str, batch_wall: float,
    ) -> Measured:  # fmt: skip
        """One response: status, metrics from ``timings``, the continuation, raw files."""
        stem = raw_stem(index, inv)
        text_path, json_path = response_paths(run_dir, stem)
        log = str(server.stderr_path.relative_to(run_dir))
        if reply.data is None:
            status = "timeout" if reply.timed_out else "failed"
            measured = self._failed_sample(inv, run_id, started_at, str(reply.error), reply, status, log)
            measured.sample.batch_wall_s = round(batch_wall, 4)
            return measured
        write_raw(json_path, _json(reply.data))
        content = reply.data.get("content")
        timings = ServerTimings.model_validate(reply.data.get("timings") or {})
        status, reason = "ok", None
        tps = _finite(timings.predicted_per_second)
        drafted = timings.draft_n or 0  # the server leaves draft_n out when nothing was drafted
        accepted = timings.draft_n_accepted or 0
        n_gen = timings.predicted_n
        acceptance = tpp = metrics = None
        if not isinstance(content, str):
            status, reason = "failed", "the response has no generated text (content)"
        elif inv.role == "speculative":
            metrics = ParsedLog(
                file=str(json_path.relative_to(run_dir)), kind="speculative", n_predict=n_gen,
                n_drafted=drafted, n_accept=accepted,
                decoded=Throughput(tokens=n_gen, seconds=(timings.predicted_ms or 0) / 1000, tps=tps),
            )  # fmt: skip
            acceptance = accepted / drafted if drafted else None
            tpp = n_gen / (n_gen - accepted) if n_gen is not None and n_gen - accepted > 0 else None
            if not drafted:
                status, reason = "invalid", "speculation never engaged (draft_n = 0)"
        if status == "ok" and tps is None:
            status, reason = "failed", "no decode speed in the response timings"
        prompt_n = timings.prompt_n + (timings.cache_n or 0) if timings.prompt_n is not None else None
        too_long = prompt_over_context(prompt_n, inv.generation.ctx_size)
        if too_long and status in ("ok", "invalid"):
            status, reason = "failed", too_long
        text = continuation(content, inv.prompt_text, echoed=False) if isinstance(content, str) else None
        if text is not None:
            write_raw(text_path, content)
        sample = Sample(
            **inv.model_dump(include=set(Measurement.model_fields)), run_id=run_id, status=status,
            valid=status == "ok", invalid_reason=reason, metrics=metrics, tps=tps, acceptance=acceptance,
            tokens_per_pass=tpp, n_generated=n_gen,
            output_sha256=sha256_text(text) if text is not None and status in ("ok", "invalid") else None,
            exit_code=None, wall_s=round(reply.wall_s, 4), cmd=list(inv.argv),
            stdout_path=str(text_path.relative_to(run_dir)) if text is not None else None,
            stderr_path=log, started_at=started_at, timings=timings, ttft_ms=_finite(timings.prompt_ms),
            batch=inv.batch, batch_wall_s=round(batch_wall, 4),
        )  # fmt: skip
        return Measured(sample, text if status in ("ok", "invalid") else None)


def _json(data: dict) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False)

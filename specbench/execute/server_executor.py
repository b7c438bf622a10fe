"""The server runner's executor: one llama-server per server setting, requests instead of processes.

The plan puts every request of a setting (same ``argv``) in a row; the executor starts a server when
the setting changes, checks on ``/slots`` that a speculative server really speculates, sends
``warmup`` discarded requests, then sends each batch's requests at once. A setting whose server
cannot start or does not speculate fails every one of its samples with that reason, without
reloading. Around each speculative batch ``/metrics`` gives the batch's draft counters.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.base.errors import ParseError
from specbench.base.formats import json_text
from specbench.base.methods import keeps_server_state
from specbench.execute.executor import raw_stem
from specbench.execute.judge import Outcome
from specbench.execute.process import process_cpu_s
from specbench.execute.server import (
    Reply,
    RunningServer,
    ServerError,
    get_text,
    post,
    speculative_slots,
    start_server,
)
from specbench.parse.parsed import SpecCounters
from specbench.parse.server import parse_metrics, parse_server_log, timings_log
from specbench.results.folder import response_paths, server_log_paths, write_raw
from specbench.results.records import ServerTimings

if TYPE_CHECKING:
    from specbench.plan.invocation import CompletionRequest, Invocation

NO_SPECULATION = (
    "llama-server runs without speculation (/slots says so: the draft model or method failed to "
    "initialise; see the server's log)"
)
SOURCE = "the response"


def _request(inv: Invocation) -> CompletionRequest:
    """A server invocation's request (the server plan gives each one; a process plan none)."""
    if inv.request is None:
        raise ValueError(
            f"a server invocation without a request ({inv.role} {inv.prompt_id}): a planning bug"
        )
    return inv.request


class ServerExecutor:
    """Measures invocations as requests to a long-lived llama-server (see the module docstring)."""

    def __init__(self, warmup: int = 1):
        self.warmup = warmup
        self.model_loads = 0  # llama-server processes started (each loads its models), warmups included
        self._server: RunningServer | None = None
        self._server_key: tuple | None = None  # (build, *argv): each build's setting gets its own start
        self._failed: dict[tuple[str | None, ...], str] = {}  # (build, *argv) -> why it cannot be measured
        self._cache_prompt = False  # the server drafts only for requests that keep their prompt

    def run(self, batch: list[tuple[int, Invocation]], run_dir: Path) -> list[Outcome]:
        """Send the batch's requests at once (one per slot) and report each response."""
        first_index, first = batch[0]
        if first.role == "speculative" and keeps_server_state(first.method):
            self.close()  # a stateful method's sample gets a server of its own (base/methods.py)
        if (reason := self._ensure_server(first, first_index, run_dir)) is not None:
            return [Outcome(wall_s=0.0, error=reason, source=SOURCE) for _ in batch]
        server = self._server
        assert server is not None
        out = self._send(batch, server, run_dir)
        if first.role == "speculative" and not self._cache_prompt and drafts_only_cached(server, out):
            self._cache_prompt = True  # measured again, as this server drafts: keeping the prompt
            out = self._send(batch, server, run_dir)
        return out

    def _send(
        self, batch: list[tuple[int, Invocation]], server: RunningServer, run_dir: Path
    ) -> list[Outcome]:
        speculative = batch[0][1].role == "speculative"
        before = _counters(server) if speculative else None
        log_from = _log_size(server)
        pool = ThreadPoolExecutor(max_workers=len(batch))
        try:
            cpu_before = process_cpu_s(server.proc.pid)  # the server's CPU time over the batch
            start = time.monotonic()
            bodies = [(self._body(inv), inv.timeout_s) for _, inv in batch]
            futures = [pool.submit(post, server, "/completion", body, t) for body, t in bodies]
            replies = [f.result() for f in futures]
            batch_wall = time.monotonic() - start
            cpu_after = process_cpu_s(server.proc.pid)
        except BaseException:  # Ctrl-C: the server dies first, so the requests in flight end at once
            self.close()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        after = _counters(server) if before is not None else None
        counters = after.minus(before) if after is not None and before is not None else None
        cpu = cpu_after - cpu_before if cpu_after is not None and cpu_before is not None else None
        out = [
            _outcome(inv, index, reply, server, run_dir, batch_wall, counters, cpu, body["cache_prompt"])
            for (index, inv), reply, (body, _) in zip(batch, replies, bodies, strict=True)
        ]
        if speculative and len(out) == 1:
            out = [_draft_counts_from_log(out[0], server, log_from)]
        if any(r.timed_out for r in replies) or not server.alive():
            self.close()  # a hung or dead server is not asked again; the next batch starts a fresh one
        return out

    # --- the server of the current setting ------------------------------------------------------

    def close(self) -> None:
        """Stop the current setting's server (the next batch starts a fresh one)."""
        if self._server is not None:
            self._server.stop()
            self._server = None
        self._cache_prompt = False

    def _body(self, inv: Invocation, body: dict | None = None) -> dict:
        """The request as sent to the running server: with cache_prompt: true where it drafts only so."""
        body = dict(body if body is not None else _request(inv).body())
        if self._cache_prompt and inv.role == "speculative":
            body["cache_prompt"] = True
        return body

    def _ensure_server(self, inv: Invocation, index: int, run_dir: Path) -> str | None:
        """The running server for ``inv``'s setting (started and warmed up if needed), or why not."""
        key = (inv.build, *inv.argv)  # two labels of one binary (an A/A run) still get a server each
        if key in self._failed:
            return self._failed[key]
        if self._server is not None and self._server_key == key and self._server.alive():
            return None
        self.close()
        out, err = server_log_paths(run_dir, raw_stem(index, inv))
        self.model_loads += 1
        try:
            server = start_server(list(inv.argv), out, err, timeout_s=inv.timeout_s)
        except ServerError as exc:
            self._failed[key] = str(exc)
            return str(exc)
        self._server, self._server_key = server, key
        if inv.role == "speculative" and speculative_slots(server) is False:
            self._failed[key] = NO_SPECULATION
            self.close()
            return NO_SPECULATION
        body = self._body(inv, warmup_body(inv))
        for _ in range(self.warmup):
            reply = post(server, "/completion", body, inv.timeout_s)
            if reply.error is not None:
                reason = f"warmup request failed: {reply.error}"
                died = server.proc.poll() is not None
                if died:  # it crashed on its first request: every request of this setting would
                    time.sleep(0.2)  # let the dying server's log reach the disk
                    reason = f"warmup request failed: {server.exit_reason()}"
                self.close()
                if reply.timed_out or died:
                    self._failed[key] = reason
                return reason
        return None


# A stateful method's warmup: too short to leave an n-gram in its pool (ngram-mod adds a prompt's
# n-grams from n_match = 24 tokens on) and no measured prompt's text, so it primes nothing measured.
NEUTRAL_WARMUP = "Hello"
NEUTRAL_WARMUP_TOKENS = 2


def warmup_body(inv: Invocation) -> dict:
    """The warmup request of ``inv``'s server: the sample's own request, or for a stateful method
    (``keeps_server_state``) a short unrelated one, so no warmup primes the sample it precedes."""
    request = _request(inv)
    if inv.role == "speculative" and keeps_server_state(inv.method):
        request = request.model_copy(update={"prompt": NEUTRAL_WARMUP, "n_predict": NEUTRAL_WARMUP_TOKENS})
    return request.body()


def drafts_only_cached(server: RunningServer, outcomes: list[Outcome]) -> bool:
    """Whether this llama-server drafted nothing because the requests did not keep their prompt:
    servers from late 2024 to late 2025 turn speculation off for ``cache_prompt: false``, and
    ``/slots`` then says so. Asked after the fact, so no other server gets an extra request; such a
    server's requests keep the prompt from then on (each sample's ``server_cache_prompt``)."""
    answered = [(o, o.timings) for o in outcomes if o.timings is not None]
    if not answered or any(t.draft_n or o.cache_prompt for o, t in answered):
        return False
    return speculative_slots(server) is False


def _log_size(server: RunningServer) -> int:
    try:
        return server.stderr_path.stat().st_size
    except OSError:
        return 0


def _draft_counts_from_log(out: Outcome, server: RunningServer, log_from: int) -> Outcome:
    """The draft counts of a response without them, from its server's log (ik_llama.cpp leaves
    ``draft_n`` out and logs ``draft acceptance rate``): with one request in flight, the log written
    during it is that request's; the timings say where they came from (``draft_counts_from``)."""
    t = out.timings
    if t is None or t.draft_n is not None or out.log is None:
        return out
    try:
        with open(server.stderr_path, "rb") as fh:
            fh.seek(log_from)
            text = fh.read().decode("utf-8", errors="replace")
        logged = parse_server_log(text)
    except (OSError, ParseError):
        return out
    if not logged.n_drafted:
        return out
    timings = ServerTimings.model_validate({
        **t.model_dump(), "draft_n": logged.n_drafted, "draft_n_accepted": logged.n_accept,
        "draft_counts_from": "server log",
    })  # fmt: skip
    log = timings_log(timings.model_dump(), out.log.file, speculative=True)
    return replace(out, timings=timings, log=log)


def _counters(server: RunningServer) -> SpecCounters | None:
    """The server's speculative counters now (``/metrics``); None when it has none to give."""
    try:
        return parse_metrics(get_text(server, "/metrics") or "")  # no answer: no counters either
    except ParseError:
        return None


def _outcome(
    inv: Invocation, index: int, reply: Reply, server: RunningServer, run_dir: Path, batch_wall: float,
    counters: SpecCounters | None = None, cpu_s: float | None = None, cache_prompt: bool | None = None,
) -> Outcome:  # fmt: skip
    """One response as an Outcome; its raw files (the JSON, the generated text) are written here."""
    log_path = str(server.stderr_path.relative_to(run_dir))
    if reply.data is None:
        return Outcome(
            wall_s=reply.wall_s, error=str(reply.error), timed_out=reply.timed_out, source=SOURCE,
            stderr_path=log_path, batch_wall_s=batch_wall, cache_prompt=cache_prompt,
        )  # fmt: skip
    text_path, json_path = response_paths(run_dir, raw_stem(index, inv))
    write_raw(json_path, json_text(reply.data, 1, ensure_ascii=False))
    content = reply.data.get("content")
    content = content if isinstance(content, str) else None
    if content is not None:
        write_raw(text_path, content)
    timings = ServerTimings.model_validate(reply.data.get("timings") or {})
    return Outcome(
        wall_s=reply.wall_s, output=content, echoed=False, source=SOURCE,
        log=timings_log(timings.model_dump(), str(json_path.relative_to(run_dir)), inv.role == "speculative"),
        stdout_path=str(text_path.relative_to(run_dir)) if content is not None else None,
        stderr_path=log_path, timings=timings, batch_wall_s=batch_wall, counters=counters, cpu_s=cpu_s,
        cache_prompt=cache_prompt,
    )  # fmt: skip

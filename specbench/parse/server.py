"""Parse what the server runner keeps in ``raw/``: a llama-server log and a response's JSON. Pure.

A llama-server log holds one block per request, printed by the slot that served it::

    slot print_timing: id  0 | task 5 | prompt eval time = 42.47 ms / 13 tokens (... 306.12 tokens ...)
    slot print_timing: id  0 | task 5 |        eval time = 310.20 ms / 64 tokens (... 206.32 tokens ...)
    slot print_timing: id  0 | task 5 |       total time = 352.67 ms / 77 tokens
    slot print_timing: id  0 | task 5 | draft acceptance = 0.61905 (39 accepted / 63 generated), ...

The last request's block is the one reported; a response (``.response.json``) carries the same
numbers as its ``timings``. Both come out as the ``ParsedLog`` a process run would have given.
"""

from __future__ import annotations

import json
import re

from specbench.base.errors import ParseError
from specbench.parse.parsed import ParsedLog, Perf, PerfBlocks, SpecCounters, Throughput

_NUM = r"[-+]?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|inf|nan|-nan)"
_TIME = re.compile(
    rf"(?P<what>prompt eval|eval|total) time\s*=\s*(?P<ms>{_NUM})\s*ms\s*/\s*(?P<n>\d+)\s*tokens"
    rf"(?:\s*\(\s*{_NUM}\s*ms per token,\s*(?P<tps>{_NUM})\s*tokens per second\))?"
)
# /metrics (Prometheus text): `llamacpp:NAME VALUE` or `llamacpp:NAME{position="i"} VALUE`
_METRIC = re.compile(rf'^llamacpp:(?P<name>\w+)(?:\{{position="(?P<pos>\d+)"\}})?\s+(?P<v>{_NUM})\s*$')
_COUNTERS = {
    "spec_decode_num_drafts_total": "steps",
    "spec_decode_num_draft_tokens_total": "drafted",
    "spec_decode_num_accepted_tokens_total": "accepted",
}
_PER_POS = "spec_decode_num_accepted_tokens_per_pos_total"
_TIMINGS = {"prompt eval": "prompt", "eval": "predicted"}  # a log's timing -> its name in ``timings``
# the pin: `draft acceptance = R (A accepted / D generated), mean len = L`; older trees and forks
# (ik_llama.cpp): `draft acceptance rate = R (A accepted / D generated)`
_DRAFT = re.compile(
    rf"draft acceptance(?: rate)?\s*=\s*(?P<r>{_NUM})\s*\("
    rf"\s*(?P<a>\d+)\s*accepted\s*/\s*(?P<d>\d+)\s*generated"
)


def looks_like_server_log(text: str) -> bool:
    """A llama-server log: its lines name the server (``srv``) or a slot; a process log does not."""
    return "print_timing" in text or ("srv " in text and "slot " in text)


def parse_server_log(text: str, file: str | None = None) -> ParsedLog:
    """The last request's statistics in a llama-server log, as its response's ``timings`` say them."""
    blocks: list[dict] = []
    current: dict = {}
    for line in text.splitlines():
        if "time =" in line and (m := _TIME.search(line)):
            what = m["what"]
            if what == "prompt eval" and current:  # the next request's block begins
                blocks.append(current)
                current = {}
            if name := _TIMINGS.get(what):
                tps = float(m["tps"]) if m["tps"] else None
                current |= {f"{name}_ms": float(m["ms"]), f"{name}_n": int(m["n"]), f"{name}_per_second": tps}
        elif "draft acceptance" in line and (m := _DRAFT.search(line)):
            current |= {"draft_n": int(m["d"]), "draft_n_accepted": int(m["a"])}
    if current:
        blocks.append(current)
    blocks = [b for b in blocks if "predicted_n" in b]
    if not blocks:
        raise ParseError(
            f"no request statistics in {file or 'the log'} (a llama-server log with no finished request: no "
            "'eval time' line); parse the log of a server that answered a request"
        )
    return timings_log(blocks[-1], file, speculative="draft_n" in blocks[-1])


def parse_response(text: str, file: str | None = None) -> ParsedLog:
    """The statistics of one ``/completion`` response (its ``timings``)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"{file or 'the response'} is not valid JSON ({exc})") from None
    timings = data.get("timings") if isinstance(data, dict) else None
    if not isinstance(timings, dict) or timings.get("predicted_n") is None:
        raise ParseError(
            f"no 'timings' in {file or 'the response'}; pass a llama-server /completion response "
            "(raw/*.response.json)"
        )
    return timings_log(timings, file, speculative=timings.get("draft_n") is not None)


def timings_log(timings: dict, file: str | None = None, speculative: bool = False) -> ParsedLog:
    """llama-server ``timings`` as the statistics a process would have printed: ``encoded``,
    ``decoded`` and the draft counters for a speculative request, the target's perf block otherwise
    (eval runs: one token of a generation comes from the prompt pass). The prompt is what was
    evaluated plus what came from the cache (the n-gram lookups search all of it)."""
    t = timings
    n_gen, prompt_n = t.get("predicted_n"), t.get("prompt_n")
    prompt = prompt_n + (t.get("cache_n") or 0) if prompt_n is not None else None
    prompt_s = t["prompt_ms"] / 1000 if t.get("prompt_ms") is not None else None
    gen_s = t["predicted_ms"] / 1000 if t.get("predicted_ms") is not None else None
    if speculative:
        drafted, accepted = t.get("draft_n") or 0, t.get("draft_n_accepted") or 0
        return ParsedLog(
            file=file, kind="speculative", n_predict=n_gen, n_drafted=drafted, n_accept=accepted,
            accept=accepted / drafted if drafted else None,
            encoded=Throughput(tokens=prompt, seconds=prompt_s, tps=t.get("prompt_per_second")),
            decoded=Throughput(tokens=n_gen, seconds=gen_s, tps=t.get("predicted_per_second")),
        )  # fmt: skip
    perf = Perf(
        prompt_eval_ms=t.get("prompt_ms"), prompt_eval_tokens=prompt,
        prompt_eval_tps=t.get("prompt_per_second"), eval_ms=t.get("predicted_ms"),
        eval_runs=n_gen - 1 if n_gen is not None else None, eval_tps=t.get("predicted_per_second"),
    )  # fmt: skip
    return ParsedLog(file=file, kind="completion", perf=PerfBlocks(target=perf))


def parse_metrics(text: str, file: str | None = None) -> SpecCounters:
    """The speculative counters of a llama-server ``/metrics`` response (started with ``--metrics``);
    the per-position counts appear after the first verification step."""
    found: dict[str, int] = {}
    per_pos: dict[int, int] = {}
    for line in text.splitlines():
        m = _METRIC.match(line.strip())
        if m is None:
            continue
        value = float(m["v"])
        if m["name"] == _PER_POS and m["pos"] is not None:
            per_pos[int(m["pos"])] = int(value)
        elif m["name"] in _COUNTERS:
            found[_COUNTERS[m["name"]]] = int(value)
    if "steps" not in found:
        raise ParseError(
            f"no llamacpp:spec_decode_num_drafts_total in {file or 'the /metrics response'}; pass the "
            "/metrics text of a llama-server started with --metrics (a build with speculative counters)"
        )
    positions = [per_pos.get(i, 0) for i in range(max(per_pos) + 1)] if per_pos else []
    return SpecCounters(**found, accepted_per_pos=positions)

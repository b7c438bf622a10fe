"""Parse llama.cpp's printed statistics, every era since 2023. Pure functions over text.

One streaming pass keeps a handful of values, so a log of any size parses in bounded memory. It
reads the speculative summary (``encoded``/``decoded``, ``n_draft``..., ``accept``), the ``draft:``
and ``target:`` headers after it, and the perf lines (``llama_print_timings:``, ``llama_perf_*``,
``common_perf_print:``), after an optional ``[pid] `` and ``M.SS.mmm.uuu L `` prefix. Generated text
shares the log, so summary lines must match a whole line, and once a log shows the timestamp
prefix, lines without one (stdout) are never statistics. A number cut off at the end of a truncated
log is dropped; of several runs in one file, the last counts.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TypeGuard, cast

from specbench.base.errors import ParseError
from specbench.base.paths import os_problem
from specbench.parse.parsed import ParsedLog, Perf, PerfBlocks, SpecCounters, Throughput
from specbench.parse.server import looks_like_server_log, parse_response, parse_server_log

# --- patterns ------------------------------------------------------------------------------------

# printf %f of any locale: decimal point or comma; glibc and MSVC spellings of inf and nan.
_NUM = r"[-+]?(?:\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?|(?i:inf(?:inity)?|nan(?:\([a-z]*\))?))"
_PID = re.compile(r"\[\d+\] ?")
_STAMP = re.compile(r"\d+\.\d\d\.\d\d\d\.\d\d\d [IWED] ")  # common/log.cpp: M.SS.mmm.uuu L
# llama-speculative-simple's LOG_DBG after each committed step (examples/speculative-simple: ids.size() - 1)
_STEP = re.compile(r"(\d+)\.(\d\d)\.(\d\d\d)\.(\d\d\d) D accepted (\d+)/(\d+) draft tokens")
_STAMP_ANYWHERE = re.compile(r"\d\.\d\d\.\d\d\d\.\d\d\d I ")  # statistics are info level
_PERF_PREFIXES = ("llama_print_timings:", "llama_perf_context_print:", "llama_perf_sampler_print:",
                  "common_perf_print:")  # fmt: skip
_PERF_ANYWHERE = re.compile("|".join(re.escape(p) for p in _PERF_PREFIXES))
_PERF = re.compile(
    rf"\s*(?P<what>load|sample|sampling|samplers|prompt eval|eval|total) time\s*=\s*(?P<ms>{_NUM})\s*ms"
    rf"(?:\s*/\s*(?P<n>\d+)\s*(?:runs|tokens)"
    rf"(?:\s*\(\s*{_NUM}\s*ms per token,\s*(?P<tps>{_NUM})\s*tokens per second\))?)?"
)
# a perf line's time -> the Perf fields of its time, its count and its rate ("": not kept)
_PERF_FIELDS = {
    "load": ("load_ms", "", ""),
    "sample": ("sample_ms", "sample_runs", ""),
    "sampling": ("sample_ms", "sample_runs", ""),
    "samplers": ("sample_ms", "sample_runs", ""),
    "prompt eval": ("prompt_eval_ms", "prompt_eval_tokens", "prompt_eval_tps"),
    "eval": ("eval_ms", "eval_runs", "eval_tps"),
    "total": ("total_ms", "total_tokens", ""),
}
_THROUGHPUT = re.compile(
    rf"(?P<what>encoded|decoded)\s+(?P<n>\d+)\s+tokens"
    rf"(?:\s+in\s+(?P<s>{_NUM})\s+seconds(?:,\s*speed:\s*(?P<tps>{_NUM})\s*t/s)?)?"
)
# common_speculative_print_stats (the pin, at -lv 5), one line per implementation: `statistics NAME:
# #calls(b,g,a) = 1 11 6, ..., #gen tokens = 93, #acc tokens = 68, ..., #acc rate/pos = (1.000, ...)`
# (the rate at position i is accepted-at-i / a, the accept calls: verification steps)
_STATISTICS = re.compile(
    r"statistics\s+(?P<name>\S+):\s*#calls\(b,g,a\)\s*=\s*\d+\s+\d+\s+(?P<a>\d+),.*?"
    r"#gen tokens\s*=\s*(?P<gen>\d+),\s*#acc tokens\s*=\s*(?P<acc>\d+)"
    r"(?:,\s*#mean acc len\s*=\s*[\d.]+,\s*#acc rate/pos\s*=\s*\((?P<pos>[\d.,\s]*)\))?"
)
_COUNT = re.compile(r"(?P<what>n_draft|n_predict|n_drafted|n_accept)\s*=\s*(?P<n>-?\d+)")
_ACCEPT = re.compile(rf"accept\s*=\s*(?P<p>{_NUM})\s*%")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

_ELLIPSIS = "\u2026"  # marks the tail of an over-long line: nothing in it starts a line
_MAX_LINE = 1 << 20
_KEEP_TAIL = 1 << 16
_CHUNK = 1 << 20
_SNIFF = 8192
_SERVER_MAX = 64 << 20  # a llama-server log of one setting: many requests, each a few lines


def _float(text: str) -> float:
    if text[-1] == ")":  # MSVC's nan(ind)
        text = text[: text.index("(")]
    return float(text.replace(",", "."))


def _fraction(percent: str) -> float:
    """The printed percentage as a fraction, correctly rounded (61.514 -> 0.61514 exactly as printed)."""
    try:
        return float(Decimal(percent.replace(",", ".")) / 100)
    except InvalidOperation:  # inf/nan spellings Decimal does not take
        return _float(percent) / 100


class _Perf:
    """A perf block being filled; a field printed twice means a new block (a later run) began."""

    __slots__ = ("values", "sampling_seen")

    def __init__(self) -> None:
        self.values: dict[str, float | int] = {}
        self.sampling_seen = False

    def put(self, **values: float | int | None) -> None:
        new = {k: v for k, v in values.items() if v is not None}
        if any(k in self.values for k in new):
            self.values.clear()
            self.sampling_seen = False
        self.values.update(new)

    def model(self) -> Perf | None:
        return Perf(**self.values) if self.values else None


class _State:
    """Everything one pass has found so far: O(1) memory whatever the log size."""

    def __init__(self) -> None:
        self.stamped = False  # seen llama.cpp's timestamp prefix: unstamped lines are stdout
        self._reset()

    def _reset(self) -> None:
        self.steps: list[tuple[float, int]] = []
        self.counters: SpecCounters | None = None
        self.summary: dict[str, object] = {}
        self.perf = {"target": _Perf(), "draft": _Perf()}
        self.section = "target"

    def feed(self, line: str, complete: bool) -> None:
        """Take one line (no line ending) that passed `_maybe_stats`; `complete`: not a cut final line."""
        if "\x1b" in line:
            line = _ANSI.sub("", line)
        first = line[0]
        if first == "[" and (m := _PID.match(line)):
            line = line[m.end() :]
            first = line[:1]
        if first.isdigit() and (m := _STAMP.match(line)):
            self.stamped = True
            if line[m.end() - 2] == "D":
                self._step(line, complete)
                return
            self._body(line[m.end() :], complete)
            return
        if self.stamped:
            self._embedded(line, complete, stamped_only=True)
            return
        if len(line) > 2 and line[1] == " " and first in "IWED":  # level without timestamp
            line = line[2:]
        if not self._body(line, complete):
            self._embedded(line, complete, stamped_only=False)

    def _embedded(self, line: str, complete: bool, stamped_only: bool) -> None:
        """Statistics glued behind stdout text that had no final newline."""
        if " I " in line and (m := _STAMP_ANYWHERE.search(line)):
            self.stamped = True
            self._body(line[m.end() :], complete)
        elif not stamped_only and "_print" in line and (m := _PERF_ANYWHERE.search(line)):
            self._body(line[m.start() :], complete)

    def _body(self, body: str, complete: bool) -> bool:
        """Interpret the text after the prefixes; True when it was a statistics line."""
        body = body.rstrip()
        if not body:
            return False
        first = body[0]
        if first in "lc":
            return body.startswith(_PERF_PREFIXES) and self._perf(body[body.index(":") + 1 :])
        if first in "ed":
            return self._header("draft") if body == "draft:" else self._throughput(body, complete)
        if first == "n":
            return complete and self._count(body)
        if first == "a":
            return self._accept(body, complete)
        if first == "t" and body == "target:":
            return self._header("target")
        return complete and "statistics" in body and self._statistics(body)

    def _statistics(self, body: str) -> bool:
        """One speculative implementation's draft counters: summed over the implementations of a
        combination (``draft-simple,ngram-mod``: each verification step checks one's draft)."""
        m = _STATISTICS.search(body)
        if m is None:
            return False
        steps = int(m["a"])
        rates = [_float(r) for r in m["pos"].split(",") if r.strip()] if m["pos"] else []
        # the rates are printed with 3 decimals: the counts they give are exact below 1000 steps
        per_pos = [round(r * steps) for r in rates]
        counters = SpecCounters(
            steps=steps, drafted=int(m["gen"]), accepted=int(m["acc"]), accepted_per_pos=per_pos
        )
        self.counters = counters if self.counters is None else self.counters.plus(counters)
        return True

    def _step(self, line: str, complete: bool) -> None:
        """A generation step of a speculative run (debug level): when, and how many tokens."""
        m = _STEP.match(line)
        if m is None or not complete:
            return
        if self.summary.get("decoded") is not None:  # a second run begins
            self._reset()
        minutes, secs, ms, us, accepted = (int(x) for x in m.group(1, 2, 3, 4, 5))
        self.steps.append((minutes * 60 + secs + ms / 1e3 + us / 1e6, accepted + 1))

    @staticmethod
    def _whole(m: re.Match[str] | None, body: str, complete: bool) -> TypeGuard[re.Match[str]]:
        # A complete line must be nothing but the statistic (generated prose must not pass);
        # a cut final line may end early, its optional parts then simply absent.
        return m is not None and (m.end() == len(body) or not complete)

    def _header(self, section: str) -> bool:
        if not self.summary:  # headers only follow a speculative summary; elsewhere it is prose
            return False
        self.section = section
        self.perf[section] = _Perf()
        return True

    def _throughput(self, body: str, complete: bool) -> bool:
        m = _THROUGHPUT.match(body)
        if not self._whole(m, body, complete):
            return False
        what = m["what"]
        if what == "encoded" and "encoded" in self.summary:  # a second run begins
            self._reset()
        self.summary[what] = Throughput(
            tokens=int(m["n"]),
            seconds=_float(m["s"]) if m["s"] else None,
            tps=_float(m["tps"]) if m["tps"] else None,
        )
        return True

    def _count(self, body: str) -> bool:
        m = _COUNT.match(body)
        if not self._whole(m, body, True):
            return False
        self.summary[m["what"]] = int(m["n"])
        return True

    def _accept(self, body: str, complete: bool) -> bool:
        m = _ACCEPT.match(body)
        if not self._whole(m, body, complete):
            return False
        self.summary["accept"] = _fraction(m["p"])
        return True

    def _perf(self, rest: str) -> bool:
        m = _PERF.match(rest)
        if m is None:
            return False
        block, what = self.perf[self.section], m["what"]
        ms: float | None = _float(m["ms"])
        n = int(m["n"]) if m["n"] else None
        tps = _float(m["tps"]) if m["tps"] else None
        if what == "samplers" and block.sampling_seen:
            # `sampling time` (common_perf_print) includes the samplers' time: it wins; the
            # samplers line then only adds the count. Alone (llama_perf_sampler_print) it is the time.
            ms = None
        block.put(**{name: v for name, v in zip(_PERF_FIELDS[what], (ms, n, tps), strict=True) if name})
        block.sampling_seen |= what in ("sample", "sampling")
        return True

    def result(self, file: str | None) -> ParsedLog:
        target, draft = self.perf["target"].model(), self.perf["draft"].model()
        if not self.summary and target is None and draft is None:
            raise ParseError(
                f"no llama.cpp statistics found in {file or 'the log'} (no speculative summary, no timing "
                "lines); pass the stderr (or mixed) output of a llama.cpp run that finished"
            )
        return ParsedLog(
            file=file,
            kind="speculative" if self.summary else "completion",
            perf=PerfBlocks(target=target, draft=draft) if (target or draft) else None,
            steps=self.steps or None,
            spec_counters=self.counters,
            **self.summary,
        )


def parse_lines(lines: Iterable[str], file: str | None = None) -> ParsedLog:
    """Parse a log given as lines (with or without line endings), in one streaming pass.

    The final line, when it does not end with a newline, may be cut short: numbers in it count only
    when followed by their unit, and bare counts (``n_accept = 19``...) are not taken from it.
    """
    state = _State()
    feed, maybe, stamp = state.feed, _maybe_stats, _STAMP.match
    prev: str | None = None
    for line in lines:
        if prev is not None:
            if not state.stamped and prev[:1].isdigit() and stamp(prev):
                state.stamped = True
            if maybe(prev):
                feed(prev.rstrip("\r\n"), True)
        prev = line
    if prev is not None and maybe(prev):
        feed(prev.rstrip("\r\n"), prev.endswith(("\n", "\r")))
    return state.result(file)


# The model-loading debug lines -lv 5 adds (one per tensor and graph input: 0.5 MB a sample)
_LOADING_NOISE = re.compile(
    r"\d+\.\d\d\.\d\d\d\.\d\d\d D (create_tensor: loading tensor|llama_graph_n_input_tensors:)"
)


def without_loading_noise(text: str) -> tuple[str, int]:
    """``text`` without llama.cpp's per-tensor loading debug lines, and how many were dropped."""
    kept, dropped = [], 0
    for line in text.splitlines(keepends=True):
        if line[:1].isdigit() and _LOADING_NOISE.match(line):
            dropped += 1
        else:
            kept.append(line)
    return ("".join(kept), dropped) if dropped else (text, 0)


def _maybe_stats(line: str) -> bool:
    """Cheap substring tests before any regex: every statistic line passes, most other lines do not."""
    return (
        "time =" in line
        or "coded " in line
        or "accept" in line
        or "draft" in line
        or "n_predict" in line
        or "target:" in line
    )


def parse_text(text: str, file: str | None = None) -> ParsedLog:
    """Parse a whole captured log (stdout, stderr, or both mixed)."""
    return parse_lines(text.splitlines(keepends=True), file)


def parse_file(path: str | Path) -> ParsedLog:
    """Parse a log file, streaming it: memory stays bounded whatever its size. ``-`` is stdin.
    The file is read once, so a pipe (``/dev/stdin``, a FIFO) is parsed too."""
    if str(path) == "-":
        # a BufferedReader at run time (what peek needs); typeshed types it as BinaryIO
        return parse_stream(cast(io.BufferedReader, sys.stdin.buffer), "<stdin>")
    path = Path(path)
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise ParseError(f"log file not found: {path}; check the path") from None
    except IsADirectoryError:
        logs = f"{path}/raw/*.stderr" if (path / "raw").is_dir() else f"{path}/*.stderr"  # a run folder's
        raise ParseError(f"{path} is a directory; pass the log files in it (e.g. {logs})") from None
    except OSError as exc:
        raise ParseError(f"cannot read {os_problem(exc, path)}") from None
    with fh:
        if path.name.endswith(".json"):  # the server runner's raw/*.response.json
            return parse_response(fh.read(_SERVER_MAX).decode("utf-8", "replace"), str(path))
        try:
            return parse_stream(fh, str(path))
        except ParseError:
            fh.seek(0)
            text = fh.read(_SERVER_MAX).decode("utf-8", "replace")
            if not looks_like_server_log(text):
                raise
            return parse_server_log(text, str(path))  # the server runner's raw/*-server.stderr


def parse_stream(fh: io.BufferedReader, name: str) -> ParsedLog:
    """Parse a buffered binary stream read once from where it is (a file, a pipe, stdin); its
    first bytes are peeked at, not consumed, to tell the encoding."""
    try:
        head = fh.peek(_SNIFF)[:_SNIFF]
    except OSError as exc:
        raise ParseError(f"cannot read {name}: {exc.strerror or exc}") from None
    if not head:
        raise ParseError(f"{name} is empty; capture llama.cpp's stderr into it (2>{name}) and parse again")
    # Windows PowerShell redirects write UTF-16 with a byte-order mark: text, despite its NUL bytes.
    encoding = "utf-16" if head[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    if encoding != "utf-16" and b"\x00" in head:
        raise ParseError(f"{name} is a binary file, not a text log; pass the captured output of llama.cpp")
    text = io.TextIOWrapper(fh, encoding=encoding, errors="replace")
    try:
        return parse_lines(_file_lines(text), name)
    finally:
        text.detach()  # the caller owns ``fh`` (stdin stays open)


def _file_lines(fh) -> Iterator[str]:
    """Lines of a text file read in chunks; an over-long line keeps only its marked tail."""
    carry = ""
    while chunk := fh.read(_CHUNK):
        if carry:
            chunk = carry + chunk
        parts = chunk.split("\n")
        carry = parts.pop()
        for part in parts:
            yield part + "\n"
        if len(carry) > _MAX_LINE:
            carry = _ELLIPSIS + carry[-_KEEP_TAIL:]
    if carry:
        yield carry

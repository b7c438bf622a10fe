"""The log parser against a corpus of real and hand-written llama.cpp logs (tests/logs/).

Expected values were read off each log by eye: they check the parser against what the log says.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specbench.base.errors import ParseError
from specbench.parse.process import parse_file, parse_lines, parse_text
from tests.helpers.parselogs import (
    EXPECTED,
    INF,
    LOGS,
    NAN,
    nan_safe,
)

UNPARSEABLE = [
    "real/spec-simple-draft.stdout",  # stdout alone holds no statistics
    "real/spec-simple-ngram.stdout",
    "real/spec-simple-ngram-repeat.stdout",
    "real/spec-simple-ngram-steps.stdout",
    "real/speculative-draft.stdout",
    "real/completion-f32.stdout",
    "real/2024-0290-speculative-draft.stdout",
    "real/2024-0290-cli-f32.stdout",
    "real/ik-015-cli-q8.stdout",
    "real/ik-015-cli-q4-ends-at-once.stdout",  # empty: its first token ended the answer
    # refused by llama.cpp before any statistics (their error lines: tests/parse/test_crash.py)
    "real/completion-q4-ctv-q8-fa-off.stderr",
    "real/spec-simple-q4-ctv-q8-fa-off.stderr",
    "real/bench-q4-ctv-q8-fa-off.stderr",
    "real/spec-simple-f32-ctv-q8-fa-off-lv5.stderr",
    # a prompt over the batch (their failure reasons: tests/execute/test_outputs.py)
    "real/spec-simple-over-batch.stderr",
    "real/speculative-over-batch.stderr",
    "real/2024-0290-speculative-over-batch.stderr",
    "synthetic/2023-main-killed-before-timings.log",
    "synthetic/nothing.log",
]


def test_corpus_is_covered():
    # server-*.json are whole /completion responses for the judge's tests (tests/execute/test_judge.py);
    # *-stamped.* is one time-stamped run for the same-span tests (tests/parse/test_span.py)
    files = {str(p.relative_to(LOGS)) for p in LOGS.rglob("*")
             if p.is_file() and p.name != "README.md" and not p.name.startswith("server-")
             and "-stamped." not in p.name}  # fmt: skip
    assert files == set(EXPECTED) | set(UNPARSEABLE)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus(name):
    got = parse_file(LOGS / name)
    assert got.file == str(LOGS / name)
    data = got.to_json()
    data.pop("file")
    assert nan_safe(data) == nan_safe(EXPECTED[name])
    # parse_text agrees with the streaming file parser
    assert nan_safe(parse_text((LOGS / name).read_text(encoding="utf-8")).to_json()) == nan_safe(data)


@pytest.mark.parametrize("name", UNPARSEABLE)
def test_nothing_recognisable_is_an_error_naming_the_file(name):
    with pytest.raises(ParseError) as exc:
        parse_file(LOGS / name)
    msg = str(exc.value)
    assert str(LOGS / name) in msg and "\n" not in msg


@pytest.mark.parametrize("name", ["synthetic/2024-speculative.log", "real/spec-simple-draft.mixed.log"])
def test_windows_line_endings(name):
    text = (LOGS / name).read_text(encoding="utf-8")
    assert nan_safe(parse_text(text.replace("\n", "\r\n")).to_json()) == nan_safe(parse_text(text).to_json())


TRUNCATED_SOURCES = [
    "synthetic/2024-speculative.log",
    "synthetic/2023-speculative-pid.log",
    "synthetic/2024-speculative-simple-comma-prefixed.log",
    "real/speculative-draft.stderr",
]


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": nan_safe(v)})
    return out


@pytest.mark.parametrize("name", TRUNCATED_SOURCES)
def test_cut_anywhere_never_invents_a_value(name):
    """Cut the log at every character: each value found is the full log's value, never a partial one."""
    text = (LOGS / name).read_text(encoding="utf-8")
    full = _flat(parse_text(text).to_json())
    found_any = 0
    for cut in range(len(text)):
        try:
            part = _flat(parse_text(text[:cut]).to_json())
        except ParseError:
            continue
        found_any += 1
        wrong = {k: v for k, v in part.items() if k != "kind" and full.get(k) != v}
        assert not wrong, f"cut at {cut} ({text[max(0, cut - 40) : cut]!r}): {wrong}"
    assert found_any > 0


def test_lines_without_endings_last_line_may_be_cut():
    lines = (LOGS / "synthetic/2024-speculative-killed-in-summary.log").read_text().splitlines()
    # without a newline the final `n_drafted = 317` could be the start of `n_drafted = 3170`: not taken
    assert parse_lines(lines).n_drafted is None
    assert parse_lines([*lines, ""]).n_drafted == 317
    assert parse_lines(line + "\n" for line in lines).n_drafted == 317


def test_section_headers_outside_a_speculative_summary_are_text():
    text = "draft:\nllama_perf_context_print:        load time =     105.94 ms\n"
    log = parse_text(text)
    assert log.kind == "completion" and log.perf.target.load_ms == 105.94 and log.perf.draft is None


def test_stamped_log_ignores_unstamped_lookalikes():
    real = (LOGS / "real/spec-simple-draft.stderr").read_text()
    fake = "n_accept  = 1\naccept    = 1.000%\ncommon_perf_print:        load time =       1.00 ms\n"
    assert parse_text(real + fake) == parse_text(real)  # lines printed after the stats on stdout
    # ...but a bare log has no prefix to tell them apart: there the last printed value counts
    bare = (LOGS / "synthetic/2024-speculative.log").read_text()
    assert parse_text(bare + fake).n_accept == 1


# --- property tests: values printed the way llama.cpp prints them parse back exactly ----------------

finite = st.floats(min_value=0, max_value=1e7, allow_nan=False, allow_infinity=False)
special = st.sampled_from([INF, NAN])
value = st.one_of(finite, finite, special)
count = st.integers(min_value=0, max_value=10**6)
prefix = st.sampled_from(["", "[4242] ", "0.04.895.579 I ", "[7] 12.34.567.890 I ", "I "])
perf_prefix = st.sampled_from(
    ["llama_print_timings", "llama_perf_context_print", "llama_perf_sampler_print", "common_perf_print"]
)


def printed(fmt: str, x: float, comma: bool) -> str:
    s = fmt % x  # Python's %-formatting rounds like C printf; inf/nan print as in glibc
    return s.replace(".", ",") if comma else s


def back(s: str) -> float:
    """What the printed text says, as a float."""
    return float(s.strip().replace(",", "."))


def same(a: float | None, b: float) -> bool:
    return a is not None and (a == b or (math.isnan(a) and math.isnan(b)))


@settings(max_examples=300, deadline=None)
@given(pre=prefix, name=perf_prefix, ms=value, n=count, per_tok=value, tps=value, comma=st.booleans())
def test_perf_lines_round_trip(pre, name, ms, n, per_tok, tps, comma):
    p = lambda fmt, x: printed(fmt, x, comma)  # noqa: E731
    text = (
        f"{pre}{name}:        load time = {p('%10.2f', ms)} ms\n"
        f"{pre}{name}: prompt eval time = {p('%10.2f', ms)} ms / {n:5d} tokens "
        f"({p('%8.2f', per_tok)} ms per token, {p('%8.2f', tps)} tokens per second)\n"
        f"{pre}{name}:        eval time = {p('%10.2f', ms)} ms / {n:5d} runs   "
        f"({p('%8.2f', per_tok)} ms per token, {p('%8.2f', tps)} tokens per second)\n"
        f"{pre}{name}:       total time = {p('%10.2f', ms)} ms / {n:5d} tokens\n"
        f"{pre}{name}:    sampling time = {p('%10.2f', ms)} ms / {n:5d} runs   "
        f"({p('%8.2f', per_tok)} ms per token, {p('%8.2f', tps)} tokens per second)\n"
    )
    t = parse_text(text).perf.target
    want_ms, want_tps = back(p("%10.2f", ms)), back(p("%8.2f", tps))
    for got in (t.load_ms, t.prompt_eval_ms, t.eval_ms, t.total_ms, t.sample_ms):
        assert same(got, want_ms)
    assert t.prompt_eval_tokens == t.eval_runs == t.total_tokens == t.sample_runs == n
    assert same(t.prompt_eval_tps, want_tps) and same(t.eval_tps, want_tps)


@settings(max_examples=300, deadline=None)
@given(pre=prefix, n=count, secs=value, tps=value, pct=value, counts=st.tuples(count, count, count, count),
       pct_fmt=st.sampled_from(["%.3f", "%5.2f"]), comma=st.booleans())  # fmt: skip
def test_speculative_summary_round_trips(pre, n, secs, tps, pct, counts, pct_fmt, comma):
    p = lambda fmt, x: printed(fmt, x, comma)  # noqa: E731
    n_draft, n_predict, n_drafted, n_accept = counts
    text = (
        f"{pre}encoded {n:4d} tokens in {p('%8.3f', secs)} seconds, speed: {p('%8.3f', tps)} t/s\n"
        f"{pre}decoded {n:4d} tokens in {p('%8.3f', secs)} seconds, speed: {p('%8.3f', tps)} t/s\n"
        f"{pre}\n{pre}n_draft   = {n_draft}\n{pre}n_predict = {n_predict}\n"
        f"{pre}n_drafted = {n_drafted}\n{pre}n_accept  = {n_accept}\n"
        f"{pre}accept    = {p(pct_fmt, pct)}%\n"
    )
    log = parse_text(text)
    assert log.kind == "speculative"
    for tp in (log.encoded, log.decoded):
        assert tp.tokens == n
        assert same(tp.seconds, back(p("%8.3f", secs))) and same(tp.tps, back(p("%8.3f", tps)))
    assert (log.n_draft, log.n_predict, log.n_drafted, log.n_accept) == counts
    shown = p(pct_fmt, pct).strip().replace(",", ".")
    if math.isfinite(pct):
        assert log.accept == float(Decimal(shown) / 100)  # the printed percentage / 100, correctly rounded
        assert f"{log.accept * 100:.{len(shown.split('.')[1])}f}" == shown
    else:
        assert same(log.accept, float(shown) / 100)


@settings(max_examples=100, deadline=None)
@given(noise=st.lists(st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=80),
                      max_size=20))  # fmt: skip
def test_stdout_noise_in_a_stamped_log_changes_nothing(noise):
    lines = (LOGS / "real/spec-simple-draft.mixed.log").read_text().splitlines(keepends=True)
    noisy = lines[:1] + [n + "\n" for n in noise] + lines[1:]
    assert parse_lines(noisy) == parse_lines(lines)


@pytest.mark.parametrize("text", ["-nan", "nan", "inf", "-inf", "nan(ind)", "-nan(ind)", "1.#INF"])
def test_special_values(text):
    line = f"llama_perf_context_print:        eval time =       0.00 ms /     0 runs   (  {text} ms per token, {text} tokens per second)\n"  # noqa: E501
    tps = parse_text(line).perf.target.eval_tps
    if text == "1.#INF":  # old MSVC spelling: not a number we can read, so it is simply absent
        assert tps is None
    else:
        assert math.isnan(tps) if "nan" in text else tps == float(text)

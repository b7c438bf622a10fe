"""The log parser on files: errors for what is not a log, encodings, very long lines, large files."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from specbench.base.errors import ParseError
from specbench.parse.process import ParsedLog, parse_file, parse_text
from tests.helpers.parselogs import EXPECTED, INF, LOGS


def one_line_error(path: Path, *words: str) -> None:
    with pytest.raises(ParseError) as exc:
        parse_file(path)
    msg = str(exc.value)
    assert "\n" not in msg and str(path) in msg
    for w in words:
        assert w in msg


def test_empty_file(tmp_path):
    (tmp_path / "empty.log").write_bytes(b"")
    one_line_error(tmp_path / "empty.log", "empty")


def test_binary_file(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(range(256)) * 40)
    one_line_error(path, "binary")


def test_missing_file_and_directory(tmp_path):
    one_line_error(tmp_path / "nope.log", "not found")
    one_line_error(tmp_path, "directory")


def test_utf16_log_from_windows_powershell(tmp_path):
    path = tmp_path / "ps.log"
    text = (LOGS / "synthetic/2024-cli-decimal-comma.log").read_text(encoding="utf-8")
    path.write_text(text.replace("\n", "\r\n"), encoding="utf-16")  # with its byte-order mark
    assert parse_file(path).perf == parse_text(text).perf


def test_invalid_utf8_is_replaced_not_fatal(tmp_path):
    path = tmp_path / "latin1.log"
    path.write_bytes(
        "Die Stadt hat 2,1 Millionen Einwohner \xe4\xf6\n".encode("latin-1")
        + (LOGS / "synthetic/2024-cli-decimal-comma.log").read_bytes()
    )
    assert parse_file(path).perf.target.load_ms == 3868.88


def test_overlong_line_keeps_glued_statistics(tmp_path):
    """3 MB of text without a newline, then a stamped statistic glued to it: found, memory bounded."""
    path = tmp_path / "long.log"
    stderr = (LOGS / "real/spec-simple-draft.stderr").read_text()
    head, _, tail = stderr.partition("0.02.632.759 I encoded")
    path.write_text(head + "x" * 3_000_000 + "0.02.632.759 I encoded" + tail)
    assert parse_file(path) == parse_file(LOGS / "real/spec-simple-draft.stderr").model_copy(
        update={"file": str(path)}
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads VmHWM from /proc/self/status")
def test_large_file_is_streamed_in_bounded_memory(tmp_path):
    """200 MB of real log content: parsed by a fresh process whose peak memory stays far below the size."""
    unit = b"".join((LOGS / n).read_bytes() for n in sorted(EXPECTED) if n.startswith("real/"))
    unit += (LOGS / "real/speculative-draft-verbose.mixed.log").read_bytes()  # ends with the verbose run
    path = tmp_path / "big.log"
    reps = 200_000_000 // len(unit) + 1
    with open(path, "wb") as fh:
        for _ in range(reps):
            fh.write(unit)
    code = (
        # VmHWM, not ru_maxrss: Linux carries the parent's (pytest's) peak into ru_maxrss across exec.
        "import sys; from specbench.parse.process import parse_file; "
        "log = parse_file(sys.argv[1]); "
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]; "
        "print(hwm.split()[1]); print(log.model_dump_json())"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    peak_kib, dumped = out.stdout.splitlines()
    size = path.stat().st_size
    assert size > 200_000_000
    assert int(peak_kib) * 1024 < 150_000_000, (
        f"peak RSS {int(peak_kib) // 1024} MiB for a {size >> 20} MiB log"
    )
    # values are those of the last run in the file
    want = parse_file(LOGS / "real/speculative-draft-verbose.mixed.log").model_copy(
        update={"file": str(path)}
    )
    assert ParsedLog.model_validate_json(dumped) == ParsedLog.model_validate_json(want.model_dump_json())


def test_json_is_strict_and_names_the_values_llama_cpp_printed_as_inf_or_nan():
    """The parser keeps what was printed; its JSON (samples.jsonl, every file specbench writes)
    has null there, with the field named, so JSON.parse and jq read it (issue 42)."""
    log = parse_file(LOGS / "synthetic/2024-inf-nan.log")
    assert log.encoded.tps == INF and math.isnan(log.accept) and math.isnan(log.perf.draft.eval_tps)
    text = log.model_dump_json()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    again = ParsedLog.model_validate_json(text)
    assert again.encoded.tps is None and again.encoded.not_finite == ["tps"]
    assert again.accept is None and "accept" in again.not_finite
    assert again.perf.draft.eval_tps is None and "eval_tps" in again.perf.draft.not_finite


def test_the_loading_debug_lines_of_a_step_log_are_dropped_and_nothing_else():
    """-lv 5 (the step log) also prints a debug line per tensor loaded: the executor keeps the raw
    log without them (0.5 MB a sample otherwise); what the parser reads does not change."""
    from specbench.parse.process import without_loading_noise

    text = (LOGS / "real/spec-simple-ngram-steps.stderr").read_text()
    noise = (
        "0.00.565.409 D llama_graph_n_input_tensors: input tensor 'out_ids' [i32] is used by node 'n'\n"
        "0.00.101.001 D create_tensor: loading tensor blk.0.attn_q.weight\n"
    )
    lines = text.splitlines(keepends=True)
    noisy = "".join(lines[:5]) + noise * 50 + "".join(lines[5:])
    kept, dropped = without_loading_noise(noisy)
    assert dropped == 100 and kept == text
    assert parse_text(kept) == parse_text(noisy)
    assert without_loading_noise(text) == (text, 0)


def test_statistics_lines_give_the_draft_counters_summed_over_implementations():
    """`statistics NAME: ... #acc rate/pos = (...)` (-lv 5, one line per implementation of a
    combination): the counts by position are rate x accept calls; kept out of the JSON like steps."""
    line = (
        "0.26.763.859 I spec common_specu: statistics {name}: #calls(b,g,a) =    1     11      {a}, "
        "#gen drafts =      6, #acc drafts =     6, #gen tokens =     {gen}, #acc tokens =    {acc}"
        "{tail}, dur(b,g,a) = 0.000, 0.040, 0.010 ms\n"
    )
    text = (LOGS / "real/spec-simple-ngram-steps.stderr").read_text(encoding="utf-8")
    one = parse_text(text)
    assert one.spec_counters.accepted_per_pos == [6, 6, 5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4]
    assert "spec_counters" not in one.to_json()
    combo = text + line.format(
        name="draft-simple", a=4, gen=8, acc=6, tail=", #mean acc len = 2.50, #acc rate/pos = (1.000, 0.500)"
    )
    combo += line.format(name="ngram-mod", a=0, gen=0, acc=0, tail="")  # never accepted: no rates
    both = parse_text(combo).spec_counters
    assert (both.steps, both.drafted, both.accepted) == (10, 101, 74)
    assert both.accepted_per_pos[:3] == [10, 8, 5]

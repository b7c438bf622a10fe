"""`specbench parse` as a user runs it: real exit codes, output on the right streams (in-process,
through the real ``main``; a real process where stdin is a pipe)."""

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers.cli import invoke

LOGS = Path(__file__).resolve().parents[1] / "logs"


def specbench(*args) -> subprocess.CompletedProcess:
    return invoke(*args)


def strict_json(text: str):
    """``text`` read as strict JSON: Infinity, -Infinity and NaN refused (``JSON.parse`` and jq do)."""

    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


SPECULATIVE_LOGS = sorted(
    p
    for p in (LOGS / "real").iterdir()
    if p.name.startswith("spec")
    and "stdout" not in p.name
    and not any(failed in p.name for failed in ("fa-off", "over-batch"))  # those crashed or were refused
)


def test_json_of_every_real_speculative_log_is_strict_json():
    """The speculative logs of this build print the target's eval t/s as `inf`: the JSON says null and
    names the field (issue 58 item 7: it printed `Infinity`, which no strict reader takes)."""
    out = specbench("parse", "--json", *SPECULATIVE_LOGS)
    assert out.returncode == 0, out.stderr
    data = strict_json(out.stdout)
    assert len(data) == len(SPECULATIVE_LOGS) and all(d["kind"] == "speculative" for d in data)
    assert any("eval_tps" in d["perf"]["target"].get("not_finite", []) for d in data)


def test_json_is_a_list_with_one_object_per_file():
    spec, comp = LOGS / "real/spec-simple-draft.mixed.log", LOGS / "real/completion-f32.stderr"
    out = specbench("parse", "--json", spec, comp)
    assert out.returncode == 0, out.stderr
    data = strict_json(out.stdout)
    assert [d["file"] for d in data] == [str(spec), str(comp)]
    assert data[0]["kind"] == "speculative" and data[0]["decoded"] == {
        "tokens": 73,
        "seconds": 1.501,
        "tps": 48.628,
    }
    # the target's eval t/s, printed `inf`: null, and named, as samples.jsonl writes it
    assert data[0]["accept"] == 0.98462 and data[0]["perf"]["target"]["eval_tps"] is None
    assert data[0]["perf"]["target"]["not_finite"] == ["eval_tps"]
    assert "draft" not in data[0]["perf"]  # empty draft block in the pinned build: omitted, not zeros
    assert data[1] == {"file": str(comp), "kind": "completion", "perf": {"target": {
        "load_ms": 136.35, "sample_ms": 8.76, "sample_runs": 78,
        "prompt_eval_ms": 49.18, "prompt_eval_tokens": 14, "prompt_eval_tps": 284.65,
        "eval_ms": 2229.23, "eval_runs": 63, "eval_tps": 28.26, "total_ms": 2293.54, "total_tokens": 77,
    }}}  # fmt: skip
    single = specbench("parse", "--json", comp)
    assert strict_json(single.stdout) == [data[1]]  # always a list, even for one file


def test_table(tmp_path):
    # A path longer than the 80 columns of a non-terminal stdout stays on one line (CI checkouts are deep).
    log = tmp_path / ("d" * 100) / "speculative-draft-verbose.mixed.log"
    log.parent.mkdir()
    log.write_bytes((LOGS / "real/speculative-draft-verbose.mixed.log").read_bytes())
    out = specbench("parse", log)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"{log} (speculative)"
    row = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in lines
        if "│" in line
    }
    assert row["decoded tps"] == ["66.514"] and row["accept"] == ["0.96875 (96.875%)"]
    assert row["eval_tps"] == ["inf", "113.57"]  # target, draft
    assert row["sample_ms"] == ["6.54", ""]


def test_failures_are_reported_and_the_rest_still_parsed(tmp_path):
    binary = tmp_path / "model.gguf"
    binary.write_bytes(b"GGUF\x00\x00" * 100)
    good = LOGS / "synthetic/2024-speculative.log"
    out = specbench(
        "parse", "--json", LOGS / "real/completion-f32.stdout", good, tmp_path / "missing.log", binary
    )
    assert out.returncode == 2  # bad input, as in every command
    errors = out.stderr.splitlines()
    assert len(errors) == 3 and all(e.startswith("error: ") for e in errors), out.stderr
    assert "completion-f32.stdout" in errors[0] and "missing.log" in errors[1] and "binary" in errors[2]
    assert "Traceback" not in out.stderr
    assert [d["file"] for d in json.loads(out.stdout)] == [str(good)]


def test_debug_shows_the_traceback(tmp_path):
    out = specbench("--debug", "parse", tmp_path / "missing.log")
    assert out.returncode != 0 and "Traceback" in out.stderr and "ParseError" in out.stderr


def test_stdin_and_pipes_are_read_once():
    """`-` reads stdin, and /dev/stdin (a pipe, readable once) parses the same as the file."""
    log = LOGS / "real/spec-simple-draft.mixed.log"
    want = json.loads(specbench("parse", "--json", log).stdout)[0]
    for arg in ("-", "/dev/stdin"):
        with open(log, "rb") as fh:
            proc = subprocess.Popen(
                [sys.executable, "-m", "specbench", "parse", "--json", arg],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            out, err = proc.communicate(fh.read(), timeout=60)
        assert proc.returncode == 0, err.decode()
        got = json.loads(out)[0]
        assert {k: v for k, v in got.items() if k != "file"} == {k: v for k, v in want.items() if k != "file"}

"""`specbench parse` of what the server runner keeps in raw/: a llama-server log and a response."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specbench.errors import ParseError
from specbench.parse import parse_file
from specbench.parse_server import parse_response, parse_server_log
from tests.cli.test_compare import specbench

REAL = Path(__file__).parent / "data" / "server_logs"


def test_a_speculative_server_log_gives_the_last_request_and_matches_its_response():
    log = parse_file(REAL / "server-draft.stderr")
    response = parse_file(REAL / "server-draft.response.json")
    assert log.kind == response.kind == "speculative"
    # the log holds the warmup request (task 1) and the measured one (task 10): the last counts
    assert (log.n_drafted, log.n_accept, log.n_predict, log.encoded.tokens) == (24, 24, 32, 192)
    assert log.decoded.tps == 0.40 and log.encoded.seconds == pytest.approx(23.15832)
    timings = json.loads((REAL / "server-draft.response.json").read_text())["timings"]
    assert response.decoded.tps == timings["predicted_per_second"]
    assert log.decoded.tps == pytest.approx(response.decoded.tps, abs=0.005)  # printed with 2 decimals
    assert (response.n_drafted, response.n_accept) == (timings["draft_n"], timings["draft_n_accepted"])


def test_a_plain_server_log_is_the_targets_perf_block():
    log = parse_file(REAL / "server-baseline.stderr")
    assert log.kind == "completion" and log.perf.target.eval_tps == 0.5
    assert (log.perf.target.prompt_eval_tokens, log.perf.target.eval_runs) == (192, 31)


def test_older_server_spelling_and_what_is_not_a_request():
    # older servers: a print_timing header line, the statistics on the lines below it
    old = (
        "slot print_timing: id  0 | task 3 | \n"
        "prompt eval time =   42.47 ms /    13 tokens (    3.27 ms per token,   306.12 tokens per second)\n"
        "       eval time =  310.20 ms /    64 tokens (    4.85 ms per token,   206.32 tokens per second)\n"
        "      total time =     352.67 ms /    77 tokens\n"
    )
    assert parse_server_log(old).perf.target.eval_tps == 206.32
    with pytest.raises(ParseError, match="no request statistics"):
        parse_server_log("srv  load_model: loading model\nslot   load_model: id  0 | task -1 | new slot\n")
    with pytest.raises(ParseError, match="no 'timings'"):
        parse_response('{"content": "hi"}', "r.json")
    with pytest.raises(ParseError, match="not valid JSON"):
        parse_response("{", "r.json")


def test_parse_command_reads_every_raw_file_of_a_server_run(tmp_path):
    names = ("server-draft.stderr", "server-draft.response.json", "server-baseline.stderr")
    files = [REAL / name for name in names]
    proc = specbench("parse", "--json", *files, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [d["kind"] for d in json.loads(proc.stdout)] == ["speculative", "speculative", "completion"]

"""`specbench parse` of what the server runner keeps in raw/: a llama-server log and a response."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specbench.base.errors import ParseError
from specbench.parse.parsed import SpecCounters
from specbench.parse.process import parse_file
from specbench.parse.server import parse_metrics, parse_response, parse_server_log
from tests.helpers.cli import specbench

REAL = Path(__file__).parents[1] / "data" / "server_logs"


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


def test_an_older_servers_draft_acceptance_rate_line_is_speculative_with_its_counters():
    """ik_llama.cpp and upstream servers before the pin print ``draft acceptance rate = R (A
    accepted / D generated)``: the request drafted, so it is no plain completion."""
    log = parse_file(Path(__file__).parents[1] / "logs" / "synthetic" / "server-ik-draft.log")
    assert log.kind == "speculative"
    assert (log.n_drafted, log.n_accept, log.n_predict, log.decoded.tps) == (56, 48, 64, 158.90)
    line = "draft acceptance rate = 0.50000 (    1 accepted /     2 generated)\n"
    old = "slot print_timing: id  0 | task 3 | \n       eval time =  310.20 ms /    64 tokens\n" + line
    assert (parse_server_log(old).n_drafted, parse_server_log(old).n_accept) == (2, 1)


def test_a_real_ik_server_log_is_speculative_with_the_counts_its_response_leaves_out():
    """ik_llama.cpp 0.1.5's llama-server (issue 59): its log's last request drafted 12 and accepted
    12; its response's timings carry no draft_n, so the runner reads the log (server_executor)."""
    log = parse_server_log((REAL / "ik-015-server-draft.stderr").read_text())
    assert log.kind == "speculative" and (log.n_drafted, log.n_accept, log.n_predict) == (12, 12, 16)
    timings = json.loads((REAL / "ik-015-server-draft.response.json").read_text())["timings"]
    assert "draft_n" not in timings and timings["predicted_n"] == 16


def test_parse_command_reads_every_raw_file_of_a_server_run(tmp_path):
    names = ("server-draft.stderr", "server-draft.response.json", "server-baseline.stderr")
    files = [REAL / name for name in names]
    proc = specbench("parse", "--json", *files, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [d["kind"] for d in json.loads(proc.stdout)] == ["speculative", "speculative", "completion"]


def test_metrics_of_a_real_server_give_its_speculative_counters():
    fresh = parse_metrics((REAL / "server-synth-fresh.metrics").read_text())
    assert fresh == SpecCounters(steps=0, drafted=0, accepted=0, accepted_per_pos=[])
    after = parse_metrics((REAL / "server-synth.metrics").read_text())
    assert (after.steps, after.drafted, after.accepted) == (9, 36, 22)
    assert after.accepted_per_pos == [8, 5, 5, 4]
    delta = after.minus(fresh)
    assert delta == after and delta.accept_len() == pytest.approx(22 / 9 + 1)
    assert delta.accept_by_pos() == pytest.approx([8 / 9, 5 / 9, 5 / 9, 4 / 9])
    assert fresh.accept_len() is None and fresh.accept_by_pos() is None
    # two readings' difference, and sums of differences (a cell's batches)
    later = SpecCounters(steps=12, drafted=48, accepted=30, accepted_per_pos=[10, 8, 7, 5])
    step = later.minus(after)
    assert step == SpecCounters(steps=3, drafted=12, accepted=8, accepted_per_pos=[2, 3, 2, 1])
    assert step.plus(after) == later


def test_metrics_without_speculative_counters_are_refused_with_what_to_pass():
    with pytest.raises(ParseError, match="--metrics"):
        parse_metrics('{"error": {"message": "This server does not support metrics endpoint"}}')


def test_a_responses_prompt_counts_what_came_from_the_cache_as_the_server_runner_does():
    """`specbench parse` of a response and the server runner's sample read ``timings`` by one
    conversion: the prompt is what was evaluated plus what came from the cache (``cache_n``)."""
    data = json.loads((REAL / "server-draft.response.json").read_text())
    data["timings"].update(cache_n=150, prompt_n=42)
    parsed = parse_response(json.dumps(data), "r.json")
    assert parsed.encoded.tokens == 192 and parsed.accept == 1.0

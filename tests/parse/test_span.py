"""The generation span of a plain run from its time-stamped stdout reads (specbench.parse.span)."""

from __future__ import annotations

from specbench.parse.span import format_stamps, generation_seconds, parse_stamps, plain_span


def test_the_span_starts_at_the_read_that_brought_the_first_generated_byte():
    # prompt echo (10 bytes) read at 0.1 s, the first token at 0.5 s, 3 more, the closing newlines
    stamps = [(0.1, 10), (0.5, 13), (0.6, 15), (0.7, 18), (0.8, 20), (0.80005, 22)]
    assert generation_seconds(stamps, 10) == 0.80005 - 0.5
    span = plain_span(stamps, 10, eval_runs=3)
    assert span.steps == 3 and span.tps == 3 / (0.80005 - 0.5)


def test_an_echo_and_first_token_read_together_start_the_span_at_that_read():
    stamps = [(0.5, 13), (0.6, 15), (0.9, 18)]
    assert generation_seconds(stamps, 10) == 0.9 - 0.5


def test_no_generated_byte_or_no_time_is_no_span():
    assert generation_seconds([(0.1, 10)], 10) is None  # only the echo
    assert generation_seconds([(0.1, 10), (0.5, 12)], 10) is None  # one read: no time between
    assert plain_span(None, 0, 5) is None and plain_span([(0.1, 1), (0.2, 2)], None, 5) is None
    assert plain_span([(0.1, 1), (0.2, 2)], 0, 0) is None  # nothing decoded after the first token


def test_stamps_round_trip_and_a_cut_line_is_dropped():
    stamps = [(0.123456, 10), (1.5, 20)]
    assert parse_stamps(format_stamps(stamps)) == stamps
    assert parse_stamps(format_stamps(stamps) + "2.0") == stamps
    assert parse_stamps("x y\n1.0 5\n") == [(1.0, 5)]


def test_a_speculative_run_past_n_predict_is_timed_over_its_first_n_predict_tokens():
    """A real llama-speculative-simple log (-lv 5) that asked 64 tokens and decoded 79: the span
    ends with the step that brought the count to 64, and starts where its decoded line started."""
    from pathlib import Path

    from specbench.parse.process import parse_file
    from specbench.parse.span import first_tokens

    log = parse_file(Path(__file__).parents[1] / "logs" / "real" / "spec-simple-ngram-steps.stderr")
    assert log.n_predict == 79 and sum(n for _, n in log.steps) == 79
    span = first_tokens(log.steps, log.decoded.tokens, log.decoded.seconds, 64)
    start = log.steps[-1][0] - log.decoded.seconds
    done, end = 0, None
    for stamp, n in log.steps:
        done += n
        if done >= 64:
            end = stamp
            break
    assert span.steps == 64 and abs(span.seconds - (end - start)) < 1e-9
    assert 0 < span.seconds < log.decoded.seconds
    # fewer tokens than the cap: the whole decoded line; steps that do not add up: no span (not exact)
    assert first_tokens(log.steps, 79, log.decoded.seconds, 100).seconds == log.decoded.seconds
    assert first_tokens(log.steps[1:], 79, log.decoded.seconds, 64) is None
    assert first_tokens(None, 79, log.decoded.seconds, 64) is None
    assert '"steps"' not in log.model_dump_json()  # recomputable from the raw log, not stored twice

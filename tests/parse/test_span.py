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

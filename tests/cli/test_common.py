"""Fitted tables (compare, ab, history, models list): at any terminal width every header shown is
whole, values are not cut, and what did not fit is named."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from specbench.cli.common import Col, fitted_table

COLS = [Col("status"), Col("cell", wrap=True), Col("prompt"), Col("baseline"), Col("current"), Col("p"),
        Col("mde"), Col("why", wrap=True)]  # fmt: skip
ROWS = [
    ["too_noisy", "smol draft draft_max=8 draft_min=0 p_min=0 ngl=0 ngld=0", "code-02", "6.09 ± 3.44 (n=2)",
     "6.09 ± 3.44 (n=2)", "0.213", "165.1%", "too noisy to decide: +0.0%, could be -165.1%: a -5% drop"],
    ["pass", "smol_f32 baseline ngl=0", "extr-05", "56.10 ± 0.31 (n=6)", "56.40 ± 0.28 (n=6)", "0.31", "1.0%",
     "+0.5%, excludes a drop beyond -5% (at worst -0.6%)"],
]  # fmt: skip
DROP = ("p", "mde", "baseline", "current", "prompt", "why")


def render(width: int | None) -> tuple[str, list[str]]:
    table, dropped = fitted_table(COLS, ROWS, DROP, width)
    console = Console(width=width or 400, record=True, color_system=None)
    console.print(table)
    return console.export_text(), dropped


@pytest.mark.parametrize("width", [60, 90, 120])
def test_headers_and_values_are_never_cut_and_what_is_left_out_is_named(width):
    text, dropped = render(width)
    header = next(line for line in text.splitlines() if "status" in line)
    shown = [c.header for c in COLS if c.header not in dropped]
    assert re.findall(r"┃\s*(\S[^┃]*?)\s*(?=┃)", header) == shown  # each header whole, in its own column
    assert max(len(line) for line in text.splitlines()) <= width
    for row in ROWS:  # one-line columns keep whole values
        for col, value in zip(COLS, row, strict=True):
            if col.header in shown and not col.wrap:
                assert value in text
    assert dropped == list(DROP[: len(dropped)])  # left out in the order given


def test_no_width_keeps_every_column():
    text, dropped = render(None)
    assert dropped == [] and all(c.header in text for c in COLS)


@pytest.mark.parametrize("width", [50, 60])
def test_free_text_wraps_to_its_longest_word_before_a_column_is_left_out(width):
    """At 60 columns the prompt (which tells two rows of one cell apart) and the why stay: the cell
    and why wrap narrower first; a free-text column never wraps inside a word."""
    text, dropped = render(width)
    assert max(len(line) for line in text.splitlines()) <= width
    if width == 60:
        assert "prompt" not in dropped and "why" not in dropped and "extr-05" in text
    for word in ("draft_max=8", "draft_min=0", "smol_f32"):
        assert word in text  # whole words, not folded letters


def test_a_paired_table_of_four_columns_fits_60():
    """ab's columns that stay (decision, metric, cell, ratio) fit 60 columns once the cell wraps."""
    cols = [Col("decision"), Col("metric"), Col("cell", wrap=True), Col("head/base"), Col("why", wrap=True)]
    rows = [["undecided", "baseline_tps", "smol draft draft_max=8 draft_min=0 p_min=0 ngl=0 ngld=0", "0.877",
             "-12.3% [-26.7%, +5.0%] (t interval: too few pairs for a signed-rank one)"]]  # fmt: skip
    table, dropped = fitted_table(cols, rows, ("why",), 60)
    console = Console(width=60, record=True, color_system=None)
    console.print(table)
    lines = console.export_text().splitlines()
    assert dropped == ["why"] and max(len(line) for line in lines) <= 60 and "baseline_tps" in lines[3]


# What prints outside the redacting consoles (specbench.cli.common: make_console, echo, say).
_STRAY_PRINT = re.compile(
    r"\btyper\.echo\s*\(|\bclick\.echo\s*\(|\bConsole\s*\(|(?<![.\w])print\s*\(|sys\.std(?:out|err)\.write"
)


def test_every_line_the_cli_prints_goes_through_the_redacting_consoles():
    """A credential inside a value (issue 58 item 2) is redacted where the CLI prints; a print past
    the consoles would skip it."""
    from pathlib import Path

    import specbench.cli

    package = Path(specbench.cli.__file__).parent
    stray = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(package.glob("*.py"))
        if path.name != "common.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _STRAY_PRINT.search(line)
    ]
    assert not stray, "print with cli.common's say/echo/console/make_console:\n" + "\n".join(stray)


def test_the_consoles_redact_what_they_print(capsys):
    from specbench.cli.common import echo, make_console, say

    secret = "https://me:pa55word@host/m.gguf?token=t0ken"
    say(secret)
    say(secret, err=True)
    echo(secret)
    make_console(width=40).print(secret)
    out, err = capsys.readouterr()
    assert "pa55word" not in out + err and "t0ken" not in out + err
    assert out.count("https://REDACTED@host/m.gguf?token=REDACTED") == 3 and "REDACTED@host" in err

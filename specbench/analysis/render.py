"""A Report's columns and their cell formatters, and the terminal table made of them.

Every format (the terminal, Markdown, HTML) shows the same columns from the same formatters, so
the numbers cannot drift between them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specbench.analysis.cells import ALL, ROW_CELL, ROW_NAMES, ReportRow
from specbench.analysis.figures import MAX_SPREAD, number, speedup_text
from specbench.analysis.report import Report
from specbench.base.llamaopts import AXES, OPTIONS, LlamaOption
from specbench.results.cell import OPTION_FIELDS

BEST = "★"
IMPRECISE = "†"  # repetitions: auto stopped at max_repetitions without meeting `precision`
LEGEND = (
    f"{BEST} best setting of its pair: the highest speedup among its measured cells whose 95% interval "
    f"is within a factor {MAX_SPREAD:g} (none where no cell is; synthetic cells never). "
    "t/s: decode tokens/s over the speedup's pairs, averaged as the speedup is (the geometric mean over "
    "prompts, each weighted equally), so spec / baseline t/s is the speedup; ± the samples' sd. "
    "speedup: speculative / baseline t/s paired by prompt and repetition, the geometric mean over "
    "prompts (each weighted equally), with a 95% interval from repetition noise alone (n=1: one "
    "repetition, no noise estimate, no interval). per prompt: the slowest and the fastest prompt's "
    "speedup (prompts differ on purpose: their spread is not noise). predicted: the calibrated speed "
    "model (this machine's measured pass costs, see README), shown when a calibration of the pair is "
    "cached (`specbench tune` makes one); Leviathan et al.'s formula, which assumes a pass over g+1 "
    "tokens costs what one token does, stays in report.json as predicted_speedup. "
    "valid: valid speculative samples used / run; ! when any sample "
    "of the cell or its baseline was invalid or failed. "
    f"{IMPRECISE} precision not met: with repetitions: auto, a mean t/s's 95% CI stayed wider than "
    "`precision` at max_repetitions (see the row's warnings)."
)


def _tps(mean: float | None, sd: float | None) -> str:
    return number(mean) + (f" ± {sd:.1f}" if mean is not None and sd is not None else "")


def _speedup(r: ReportRow) -> str:
    if r.speedup is None:
        return "-"
    text = speedup_text(r.speedup, r.speedup_ci_low, r.speedup_ci_high, r.speedup_repetitions)
    return text + (f" {IMPRECISE}" if r.precision_met is False else "")


def _per_prompt(r: ReportRow) -> str:
    """The range of the row's per-prompt speedups; ``-`` with fewer than two prompts."""
    if r.speedup_prompts < 2 or r.speedup_prompt_low is None or r.speedup_prompt_high is None:
        return "-"
    return f"{r.speedup_prompt_low:.2f}–{r.speedup_prompt_high:.2f}x"


def _predicted(r: ReportRow) -> str:
    """The calibrated model's speedup (``analysis.speedmodel``), the only prediction shown."""
    return "-" if r.model_speedup is None else f"{r.model_speedup:.2f}x"


def _outside(r: ReportRow) -> str:
    """Share of the baseline's / speculative run's span outside the target's decode step."""
    return "/".join("-" if x is None else f"{100 * x:.0f}%" for x in (r.baseline_outside, r.spec_outside))


def _match(r: ReportRow) -> str:
    if r.synthetic:
        return "synthetic"  # drafts accepted at random: the output is not valid, never compared
    if r.outputs_match is None:
        return "-"
    return "yes" if r.outputs_match else (f"no @{r.first_diff}" if r.first_diff is not None else "no")


def _valid(r: ReportRow) -> str:
    return f"{r.n}/{r.n_total}" + ("" if r.valid else " !")


@dataclass(frozen=True)
class Column:
    header: str
    cell: Callable[[ReportRow], str]
    numeric: bool = False


_OWN_COLUMNS = ("pair", "target", "draft", "runner", *(o.key for o in OPTIONS if o.column))  # own columns
_VARIES = tuple(o.key for o in OPTIONS if o.column == "varies")  # shown only where rows differ


def _axis(o: LlamaOption) -> Column:
    """An axis's own column: its value as text, an integer whole, a float as short as it goes."""
    if o.cell_type is str:
        return Column(o.key, lambda r: getattr(r, o.key))
    return Column(o.key, lambda r: number(getattr(r, o.key), "d" if o.cell_type is int else "g"), True)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


_OPTIONS = tuple(ROW_NAMES.get(f, f) for f in OPTION_FIELDS)


def options_line(rows: list[ReportRow]) -> str | None:
    """The llama.cpp options every row shares (not a column: shown once, above the table)."""
    parts = []
    for key in _OPTIONS:
        values = {getattr(r, key) for r in rows}
        if len(values) == 1 and (value := next(iter(values))) is not None:
            parts.append(f"{key}={_text(value)}")
    return "llama.cpp options of every row: " + " ".join(parts) if parts else None


def columns(rows: list[ReportRow], runs: int) -> list[Column]:
    """The shown columns: optional ones only when they tell rows apart or carry a value."""

    def varies(key: str) -> bool:
        return len({getattr(r, key) for r in rows} - {None}) > 1

    cols = []
    if runs > 1:
        cols.append(Column("run", lambda r: r.run))
    cols.append(Column("pair", lambda r: r.pair or r.target))
    cols += [_axis(o) for o in OPTIONS if o.column == "always" or o.column == "varies" and varies(o.key)]
    for key in ROW_CELL:  # any other axis (n-gram sizes, build, ...) wherever a row sets it
        if key in _OPTIONS and len({getattr(r, key) for r in rows}) < 2:
            continue  # a llama.cpp option the rows share: once, above the table (options_line)
        if key not in _OWN_COLUMNS and any(getattr(r, key) is not None for r in rows):

            def axis_text(r: ReportRow, key: str = key) -> str:
                return _text(getattr(r, key))

            cols.append(Column(key, axis_text, True))
    if any(r.machine for r in rows):  # a merged sharded sweep: which machine measured the row
        cols.append(Column("machine", lambda r: r.machine or "-"))
    if any(r.ngl is not None or r.ngld is not None for r in rows):
        cols.append(Column("ngl/ngld", lambda r: f"{number(r.ngl, 'd')}/{number(r.ngld, 'd')}", True))
    if varies("category"):
        cols.append(Column("category", lambda r: r.category))
    cols += [
        Column("baseline t/s", lambda r: _tps(r.baseline_tps, r.baseline_tps_sd), True),
        Column("spec t/s", lambda r: _tps(r.spec_tps, r.spec_tps_sd), True),
        Column("speedup [95% CI]", lambda r: (f"{BEST} " if r.best else "") + _speedup(r), True),
    ]
    if any(r.speedup_prompts > 1 for r in rows):
        cols.append(Column("per prompt", _per_prompt, True))
    if any(r.model_speedup is not None for r in rows):  # runs with a calibration (specbench tune)
        cols.append(Column("predicted", _predicted, True))
    if any(r.baseline_outside is not None or r.spec_outside is not None for r in rows):
        cols.append(Column("outside decode b/s", _outside, True))  # docs/timing.md
    if any(r.runner == "server" for r in rows):  # per-request t/s above; the server's aggregate here
        if runs > 1 or any(r.runner != "server" for r in rows):
            cols.append(Column("runner", lambda r: r.runner))
        cols += [
            *(_axis(o) for o in AXES if o.group == "server" and o.column),
            Column("throughput t/s", lambda r: number(r.throughput_tps), True),
            Column("ttft ms", lambda r: number(r.ttft_ms), True),
        ]
    cols += [
        Column("accept", lambda r: "-" if r.acceptance is None else f"{100 * r.acceptance:.1f}%", True),
        Column("tok/pass", lambda r: number(r.tokens_per_pass, ".2f"), True),
    ]
    if any(r.accept_len is not None for r in rows):  # /metrics (server), -lv 5 statistics (process)
        cols.append(Column("acc len", lambda r: number(r.accept_len, ".2f"), True))
    return [*cols, Column("match", _match), Column("valid", _valid, True)]


# Left out first when a terminal is too narrow for every column (numbers are never cut).
# "[95% CI]" shortens the speedup column to the speedup alone.
DROP_ORDER = (
    "outside decode b/s", "predicted", "ttft ms", "acc len", "tok/pass", *_VARIES, "[95% CI]",
    "per prompt",
    "ngl/ngld", "accept", "baseline t/s", "throughput t/s", "match", "valid", "runner", "spec t/s",
)  # fmt: skip
KEPT = ("pair", *(o.key for o in OPTIONS if o.column == "always"), "speedup")  # a row, its answer: kept
SHORT_SPEEDUP = Column(
    "speedup", lambda r: (f"{BEST} " if r.best else "") + number(r.speedup, ".2f") + "x", True
)


def min_width(c: Column, rows: list[ReportRow]) -> int:
    """The narrowest a column gets: its widest cell, and its header's longest word (a header may
    wrap between words, never inside one: "throughpu" / "t" is no header)."""
    return max([len(w) for w in c.header.split()] + [len(c.cell(r)) for r in rows])


def fit(cols: list[Column], rows: list[ReportRow], width: int | None) -> tuple[list[Column], list[str]]:
    """The columns that fit ``width`` characters whole, and the headers left out."""
    if width is None:
        return cols, []

    def need(cs: list[Column]) -> int:
        return sum(min_width(c, rows) + 3 for c in cs) + 1

    dropped = []
    rest = [c.header for c in reversed(cols) if c.header not in DROP_ORDER and c.header not in KEPT]
    for header in (*DROP_ORDER, *rest):  # then any other, from the right, but never KEPT
        if need(cols) <= width:
            break
        if header == "[95% CI]" and any(c.header == "speedup [95% CI]" for c in cols):
            cols = [SHORT_SPEEDUP if c.header == "speedup [95% CI]" else c for c in cols]
            dropped.append("speedup's 95% CI")
        elif any(c.header == header for c in cols):
            cols = [c for c in cols if c.header != header]
            dropped.append(header)
    return cols, dropped


def table(report: Report, by_category: bool = False, width: int | None = None):
    """A rich Table for the terminal (best rows bold); given a ``width``, the least needed columns
    are left out (and named in the caption) rather than numbers folded mid-digit."""
    from rich.table import Table

    rows = report.shown(by_category)
    cols, dropped = fit(columns(rows, len(report.runs)), rows, width)
    caption = [i.caption() for i in report.runs]
    if dropped:
        caption.append(f"left out for the terminal's width: {', '.join(dropped)} (see report.md)")
    title = "\n".join(filter(None, ["specbench report", options_line(rows)]))
    t = Table(title=title, caption="\n".join(caption), show_lines=False)
    for c in cols:  # never narrower than a whole cell or header word: wider than the terminal, not cut
        t.add_column(
            c.header, justify="right" if c.numeric else "left", overflow="fold", min_width=min_width(c, rows)
        )
    for r in rows:
        t.add_row(*(c.cell(r) for c in cols), style="bold" if r.best and r.category == ALL else None)
    return t

"""A Report's columns and their cell formatters, and every format made of them: the terminal table,
and the files beside the plots: Markdown that fits a GitHub comment, CSV and JSON with every field,
one self-contained HTML page with its PNGs embedded.

Every format shows the same columns from the same formatters, so the numbers cannot drift between them.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from specbench.analysis.cells import ALL, CONTRACT_KEYS, ROW_CELL, ROW_NAMES, ReportRow
from specbench.analysis.depth import depth_curves, markdown_lines
from specbench.analysis.figures import MAX_SPREAD, number, speedup_text
from specbench.analysis.plots import DEPTH_TITLES, TITLES, make_plots
from specbench.analysis.report import Report
from specbench.base import formats
from specbench.base.errors import SpecbenchError
from specbench.base.llamaopts import AXES, OPTIONS, LlamaOption
from specbench.base.paths import os_problem
from specbench.base.redact import redact
from specbench.results.cell import OPTION_FIELDS
from specbench.results.folder import REPORT_PAGE

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


MD_LIMIT = 60_000  # GitHub comments take 65,536 characters; leave room for a header


def _md_table(rows: list[ReportRow], runs: int) -> list[str]:
    """The best row of each cell in bold."""
    cols = columns(rows, runs)
    bold = [
        [f"**{x}**" if r.best and x not in ("", "-") else x for x in (c.cell(r) for c in cols)] for r in rows
    ]
    return formats.md_table([c.header for c in cols], bold, [c.numeric for c in cols])


def markdown(
    report: Report, by_category: bool = False, images: Sequence[Path] = (), limit: int = MD_LIMIT
) -> str:
    """report.md: fits a GitHub comment or step summary (rows beyond ``limit`` characters are
    left to report.csv); images are linked by file name."""
    rows = report.shown(by_category)
    text = _markdown(report, rows, images, dropped=0)
    while len(text) > limit and len(rows) > 1:
        keep = max(1, len(rows) * limit // len(text) - 1)
        text = _markdown(report, rows[:keep], images, dropped=len(rows) - keep)
        rows = rows[:keep]
    return text


def _markdown(report: Report, rows: list[ReportRow], images: Sequence[Path], dropped: int) -> str:
    out = ["## specbench report", ""]
    out += [f"- {formats.md_escape(i.caption())}" for i in report.runs]
    shared = options_line(rows)
    out += ["", *([formats.md_escape(shared), ""] if shared else []), *_md_table(rows, len(report.runs)), ""]
    if dropped:
        out += [f"_{dropped} more rows in report.csv (left out to fit a GitHub comment)._", ""]
    out += [f"<sub>{LEGEND}</sub>", ""]
    out += markdown_lines(depth_curves(report.rows, report.not_run))
    if report.notes:  # one quote block, a blank quote line between notes
        out += ["\n>\n".join(f"> {note}" for note in report.notes), ""]
    for img in images:
        out.append(f"![{TITLES.get(img.name, DEPTH_TITLES.get(img.name, img.stem))}]({img.name})")
    return "\n".join(out).rstrip() + "\n"


def records(report: Report, by_category: bool = False) -> list[dict]:
    """Every field of every shown row, the contract keys first (in contract order); strict JSON (a
    non-finite number is null, never Infinity)."""
    return [{**dict.fromkeys(CONTRACT_KEYS), **r.model_dump(mode="json")} for r in report.shown(by_category)]


def json_text(report: Report, by_category: bool = False) -> str:
    return formats.json_text(records(report, by_category)) + "\n"


def csv_text(report: Report, by_category: bool = False) -> str:
    """The JSON records as CSV (``base.formats.csv_text``)."""
    return formats.csv_text(records(report, by_category))


HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>specbench report</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.best td { font-weight: bold; background: #eef6ee; }
.legend, .caption { color: #555; font-size: 12px; max-width: 70em; }
.note { border-left: 4px solid #c90; padding: 0.3em 0.8em; background: #fff8e6; max-width: 70em; }
figure { margin: 1.5em 0; } img { max-width: 100%; }
</style></head><body>
<h1>specbench report</h1>
{% for c in captions %}<p class="caption">{{ c }}</p>{% endfor %}
<table><thead><tr>{% for c in cols %}<th>{{ c.header }}</th>{% endfor %}</tr></thead><tbody>
{% for r in rows %}<tr{% if r.best %} class="best"{% endif %}>{% for c in cols %}
<td{% if c.numeric %} class="num"{% endif %}>{{ c.cell(r) }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table>
<p class="legend">{{ legend }}</p>
{% for n in notes %}<p class="note">{{ n }}</p>{% endfor %}
{% for title, data in images %}<figure><img alt="{{ title }}" src="data:image/png;base64,{{ data }}">
<figcaption>{{ title }}</figcaption></figure>
{% endfor %}</body></html>
"""


def html(report: Report, by_category: bool = False, images: Sequence[Path] = ()) -> str:
    """One file a person can open or attach: the table, notes and every plot embedded."""
    import jinja2

    rows = report.shown(by_category)
    template = jinja2.Environment(autoescape=True).from_string(HTML)
    return template.render(
        captions=[i.caption() for i in report.runs],
        cols=columns(rows, len(report.runs)),
        rows=rows,
        legend=LEGEND,
        notes=report.notes,
        images=[
            (TITLES.get(p.name, p.stem), base64.b64encode(p.read_bytes()).decode("ascii")) for p in images
        ],
    )


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    csv: Path
    json: Path
    plots: list[Path]

    def all(self) -> list[Path]:
        return [self.markdown, self.html, self.csv, self.json, *self.plots]


def write_report(report: Report, out_dir: Path, by_category: bool = False) -> ReportFiles:
    """Plots first (the documents embed or link them), then report.{md,html,csv,json}."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        plots = make_plots(report, out_dir)
        md, page, csv, js = (out_dir / n for n in ("report.md", REPORT_PAGE, "report.csv", "report.json"))
        files = ReportFiles(md, page, csv, js, plots)
        files.markdown.write_text(redact(markdown(report, by_category, plots)), encoding="utf-8")
        files.html.write_text(redact(html(report, by_category, plots)), encoding="utf-8")
        files.csv.write_text(csv_text(report, by_category), encoding="utf-8")
        files.json.write_text(json_text(report, by_category), encoding="utf-8")
    except OSError as exc:
        raise SpecbenchError(
            f"cannot write the report to {os_problem(exc, out_dir)} (--out DIR writes elsewhere)"
        ) from exc
    return files

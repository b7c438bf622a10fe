"""A Report written as files: Markdown, CSV, JSON and one self-contained HTML page, beside its plots.

All show ``specbench.analysis.render``'s columns; CSV and JSON carry every field, Markdown fits a
GitHub comment, HTML embeds its PNGs.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specbench.analysis.cells import CONTRACT_KEYS, ReportRow
from specbench.analysis.depth import depth_curves, markdown_lines
from specbench.analysis.plots import DEPTH_TITLES, TITLES, make_plots
from specbench.analysis.render import LEGEND, columns, options_line
from specbench.analysis.report import Report
from specbench.base import formats
from specbench.base.errors import SpecbenchError
from specbench.base.paths import os_problem
from specbench.base.redact import redact
from specbench.results.folder import REPORT_PAGE

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
    out_dir: Path
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
        files = ReportFiles(out_dir, md, page, csv, js, plots)
        files.markdown.write_text(redact(markdown(report, by_category, plots)), encoding="utf-8")
        files.html.write_text(redact(html(report, by_category, plots)), encoding="utf-8")
        files.csv.write_text(csv_text(report, by_category), encoding="utf-8")
        files.json.write_text(json_text(report, by_category), encoding="utf-8")
    except OSError as exc:
        raise SpecbenchError(
            f"cannot write the report to {os_problem(exc, out_dir)} (--out DIR writes elsewhere)"
        ) from exc
    return files

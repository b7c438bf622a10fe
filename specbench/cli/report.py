"""`specbench report`: tables, plots and the speedup model for one or more runs."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from specbench.cli.common import app, check_paths, echo, say, table_console, table_width
from specbench.cli.output import Format, ReportFormat
from specbench.results.folder import REPORT


class By(StrEnum):
    category = "category"


@app.command("report")
def report(
    run_dirs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Run folders (default: the latest under results/); several are shown side by side."
        ),
    ] = None,
    fmt: ReportFormat = Format.table,
    out: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Folder for report.* and the PNGs [default: RUN/report]."),
    ] = None,
    by: Annotated[By | None, typer.Option(help="Add one row per prompt category.")] = None,
) -> None:
    """Aggregate samples into speedup tables and plots; write report.md/.html/.csv/.json and PNGs."""
    from specbench.analysis.render import table, write_report
    from specbench.analysis.report import build_report, latest_run

    check_paths(*(("run folder", path) for path in run_dirs or []), ("--out", out))
    dirs = list(run_dirs) if run_dirs else [latest_run()]
    by_category = by is By.category
    rep = build_report(dirs)
    if out is None:  # one run: RUN/report; several: report-A+B beside the first
        names = "+".join(p.name for p in dirs)
        out = dirs[0] / REPORT if len(dirs) == 1 else dirs[0].parent / f"report-{names}"
    files = write_report(rep, out, by_category)
    if fmt == Format.table:
        table_console.print(table(rep, by_category, width=table_width()))
        for caveat in rep.caveats:  # each once, warnings first (analysis.caveats.said_once)
            say(caveat.line())
    else:  # the file write_report wrote in that format (report.md, .csv, ...), not a second rendering
        written = next(path for path in files.all() if path.suffix == f".{fmt}")
        echo(written.read_text(encoding="utf-8"), nl=False)
    for line in ["wrote:", *(f"  {path}" for path in files.all())]:
        say(line, err=fmt != Format.table)  # stdout carries only the chosen format (for redirection)

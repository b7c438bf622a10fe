"""`specbench history`: each cell's value over the recorded runs and llama.cpp commits."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specbench.analysis.figures import Standing, speedup_text, standing_text
from specbench.cli.common import Col, app, metric_text, say, say_notes
from specbench.cli.output import Format, TableFormat, print_table
from specbench.results.metrics import METRICS, choices


@app.command("history")
def history_cmd(
    metric: Annotated[str, typer.Option(metavar="METRIC", help=f"{choices()}.")] = "spec_tps",
    cell: Annotated[
        str | None, typer.Option(metavar="TEXT", help="Only cells whose name contains this text.")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(metavar="IMAGE", help="Also draw the series to this image (png, svg, pdf).")
    ] = None,
    db: Annotated[
        Path | None, typer.Option(metavar="FILE", help="History database (default results/history.sqlite).")
    ] = None,
    add: Annotated[
        list[Path] | None, typer.Option(metavar="RUN_DIR", help="Record this run folder first (repeatable).")
    ] = None,
    fmt: TableFormat = Format.table,
) -> None:
    """Show each cell's value over the recorded runs and llama.cpp commits."""
    from specbench.gate.history import load_history
    from specbench.gate.historydb import SUPERSEDED_NOTE, default_db, record_run
    from specbench.gate.historyplot import plot_history, plot_path
    from specbench.results.manifestfile import read_facts
    from specbench.results.runstate import finish_hint

    db = db or default_db()
    plot = plot_path(plot) if plot is not None else None  # refuse a bad image name before any work
    for run_dir in add or []:
        notes: list[str] = []
        n = record_run(run_dir, db, notes)
        say_notes(notes)
        status = read_facts(run_dir, required=False).status
        if n == 0 and any(SUPERSEDED_NOTE in x for x in notes):
            continue  # a shard of a merged run in history: the note said so
        if n == 0:
            hint = f"; {finish_hint(run_dir, status)}" if status not in (None, "complete") else ""
            say(f"nothing recorded from {run_dir}: it has no valid value yet (what was recorded of it "
                f"before is kept){hint}", err=True)  # fmt: skip
            continue
        say(f"recorded {run_dir} ({n} cell rows)", err=fmt != Format.table)  # stdout: the table alone
        if status not in (None, "complete"):  # as `baseline save` refuses one: its cells may be missing
            say(f"warning: {run_dir} is {status}, not complete: its points may lack cells or repetitions; "
                f"{finish_hint(run_dir, status)} (recording it again replaces these)", err=True)  # fmt: skip
    points = load_history(db, metric, cell)
    if not points:
        what = f" matching --cell {cell!r}" if cell else ""
        say(
            f"no {metric} recorded{what} in {db} yet: each `specbench run` records itself",
            err=fmt != Format.table,
        )
        if fmt == Format.table:
            return
    rows: list[list[str]] = []
    last = None
    for p in points:
        name = f"{p.label} ({p.generation}; prompts {p.prompts}; {p.machine})"
        ci = (f" [{metric_text(p.low, metric)}, {metric_text(p.high, metric)}]"
              if p.low is not None and p.high is not None else f" n={p.n_reps}")  # fmt: skip
        started, commit = (p.started_at or "")[:19], (p.commit or "?")[:12]
        if METRICS[metric].paired:  # a speedup: as report prints the cell, and what it may be called
            value = speedup_text(p.mean, p.low, p.high, p.n_reps)
            value += "" if p.standing == Standing.DECIDED else f" {p.standing}"
        else:
            value = f"{metric_text(p.mean, metric)}{ci}" + (" synthetic" if p.synthetic else "")
        named = "" if name == last and fmt == Format.table else name  # a record names its cell
        speed = "" if p.speed_moved is None else f"{p.speed_moved:+.0%}{' !' if p.speed_warned else ''}"
        rows.append(
            [named, started, p.run_id, commit, p.threads or "", value, str(p.n_reps), str(p.n_prompts), speed]
        )
        last = name
    headers = ("cell", "started", "run", "llama.cpp", "threads", "value [95% CI]", "reps", "prompts", "speed")
    print_table([Col(h, wrap=h == "cell") for h in headers], rows, fmt, f"{metric} over runs",
                ("threads", "reps", "prompts", "run", "started", "llama.cpp"),
                "a wider terminal, or pipe the output, shows them", title_justify="left")  # fmt: skip
    if fmt == Format.table and any(p.standing != Standing.DECIDED for p in points if METRICS[metric].paired):
        shown = sorted({p.standing for p in points} - {Standing.DECIDED})
        say("; ".join(standing_text(s) for s in shown))
    if fmt == Format.table and any(p.speed_warned for p in points):
        say(
            "speed: how far the machine's own speed moved during the run (speed sentinel); '!': beyond the "
            "run's precision, so its points may sit off the trend (a slow phase of the host)"
        )
    if plot:
        say(f"plot: {plot_history(points, plot, metric)}", err=fmt != Format.table)

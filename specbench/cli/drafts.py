"""`specbench drafts TARGET [CANDIDATES...]`: which draft to download, ranked before downloading."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specbench.analysis.figures import number
from specbench.base.formats import md_table
from specbench.cli.common import Col, app, check_paths, echo, say, say_notes, times
from specbench.cli.output import Format, TableFormat, print_json, print_table
from specbench.cli.progress import ProgressView
from specbench.models.families import load_families

_FAMILIES = ", ".join(load_families())


def _ms(row) -> str:
    if row.decode_ms is None:
        return "-"
    if row.decode_ms_low is None or row.decode_ms_high is None:
        return f"{row.decode_ms:.1f}"
    return f"{row.decode_ms:.1f} [{row.decode_ms_low:.1f}, {row.decode_ms_high:.1f}]"


def _size(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:.0f} MB" if n < 1e9 else f"{n / 1e9:.2f} GB"


def _params(row) -> str:
    from specbench.models.meta import human_params

    return human_params(row.parameter_count) if row.parameter_count else "-"


COLS = [Col("#", right=True), Col("candidate", wrap=True), Col("arch"), Col("params", right=True),
        Col("type"), Col("size", right=True), Col("read", right=True),
        Col("draft ms/token est [range]", right=True), Col("measured", right=True), Col("g", right=True),
        Col("accept 1.0x", right=True), Col("accept 1.5x", right=True), Col("max", right=True),
        Col("earlier run: accept -> predicted", right=True),
        Col("compatible / why not", wrap=True)]  # fmt: skip


def _earlier(row) -> str:
    if row.alpha_earlier is None or row.predicted_speedup is None:
        return "-"
    return f"{row.alpha_earlier * 100:.0f}% -> {times(row.predicted_speedup)}"


def _cells(row) -> list[str]:
    return [str(row.rank) if row.rank else "-", row.candidate, row.architecture or "-", _params(row),
            row.file_type or "-", _size(row.size_bytes), _size(row.header_bytes_read), _ms(row),
            number(row.decode_ms_measured), str(row.draft_max or "-"),
            number(row.alpha_break_even, ".0%"), number(row.alpha_goal, ".0%"),
            times(row.ceiling), _earlier(row),
            "yes" if row.compatible and not row.reason else row.reason or "no"]  # fmt: skip


def _head(result) -> list[str]:
    t = result.target
    lines = [
        f"target: {t.candidate} ({t.architecture}, {_params(t)}, {t.file_type}, {_size(t.size_bytes)}); "
        f"pass costs: {result.target_costs}"
        + (f", decode {t.decode_ms_measured:.1f} ms/token" if t.decode_ms_measured else "")
    ]
    c = result.curve
    if c is not None:
        err = "not known (fewer than 3 models)" if c.rel_error is None else f"±{c.rel_error * 100:.0f}%"
        lines.append(
            f"cost curve: {c.a_ms:.2f} ms + {c.b_ms_per_gb:.1f} ms per GB read per token, "
            f"fitted on {len(c.points)} model(s) timed by llama-bench at KV depth {result.depth}; "
            f"leave-one-out error {err}"
        )
        for p in c.points:
            loo = (
                "" if p["loo_error"] is None else f", estimate off by {p['loo_error'] * 100:+.0f}% without it"
            )
            lines.append(
                f"  {p['model']}: {p['bytes_per_token'] / 1e6:.0f} MB per token, "
                f"{p['decode_ms']:.1f} ms/token measured{loo}"
            )
    lines.append(
        f"accept: the per-token acceptance the draft needs at draft length g for 1.0x and "
        f"{result.goal:g}x (the speed model); max: the speedup if every draft were accepted"
    )
    return lines


def _markdown(result) -> str:
    out = [f"- {line.strip()}" for line in _head(result)] + [""]
    out += md_table([c.header for c in COLS], [_cells(row) for row in result.rows])
    if result.server_command:
        out += ["", "```sh", result.server_command, "```"]
    return "\n".join(out)


@app.command("drafts")
def drafts(
    target: Annotated[
        str, typer.Argument(help="The target: a local GGUF, a Hub repo/file, or a config's model.")
    ],
    candidates: Annotated[
        list[str] | None,
        typer.Argument(
            help="Draft candidates: local GGUFs or folders, Hub repo/file or whole repos, a config's models."
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="A run config: its models may be named (and --measure uses its build and prompts).",
        ),
    ] = None,
    family: Annotated[
        list[str] | None,
        typer.Option(help=f"Candidates from the curated list (repeatable): {_FAMILIES}."),
    ] = None,
    max_draft: Annotated[int, typer.Option(help="Longest draft length to consider.", min=1, max=64)] = 16,
    threads: Annotated[int | None, typer.Option("--threads", "-t", help="Threads for llama-bench.")] = None,
    results: Annotated[
        Path | None,
        typer.Option(help="Run folders to find earlier runs of a pair in [default: results/]."),
    ] = None,
    no_measure: Annotated[
        bool, typer.Option("--no-measure", help="Do not run llama-bench; use only the calibration cache.")
    ] = False,
    measure: Annotated[
        int,
        typer.Option(
            metavar="K",
            min=0,
            help="Download the K best-ranked drafts and measure each with the target (a short run).",
        ),
    ] = 0,
    out: Annotated[
        Path | None, typer.Option(help="--measure's run folder [default: results/<run-id>/].")
    ] = None,
    fmt: TableFormat = Format.table,
) -> None:
    """Rank draft models for a target by what they need to pay off here, from their GGUF headers alone."""
    from specbench.base.paths import results_dir
    from specbench.plan.config import load_config
    from specbench.results.runstate import check_fresh
    from specbench.tune.draftmeasure import Measured
    from specbench.tune.draftmeasure import measure as measure_best
    from specbench.tune.draftmodels import Request
    from specbench.tune.drafts import pick_build, rank

    check_paths(("--config", config))
    cfg = load_config(config) if config is not None else None
    if measure and out is not None:  # refused before the ranking's llama-bench runs, not after
        check_paths(("--out", out))
        check_fresh(out)
    build = pick_build()
    req = Request(target=target, candidates=candidates or [], families=family or [], config=cfg,
                  max_draft=max_draft, threads=threads, measure_costs=not no_measure,
                  results=results if results is not None else results_dir())  # fmt: skip
    note = (lambda line: None) if fmt == Format.json else (lambda line: say(line, err=True))
    result = rank(req, build, note)
    say_notes(result.notes)
    measured: list[Measured] = []
    run_dir = None
    if measure:
        view = ProgressView(quiet=fmt == Format.json)
        try:
            run_dir, measured = measure_best(
                result, measure, out, cfg, build.backend if build else "auto", progress=view, note=note
            )
        finally:
            view.stop()
    if fmt == Format.json:
        data = result.model_dump(mode="json")
        if measure:
            data["measured"] = [m.model_dump(mode="json") for m in measured]
            data["run_dir"] = str(run_dir)
        print_json(data)
        return
    if fmt == Format.md:
        echo(_markdown(result))
    elif fmt == Format.csv:  # the ranking alone on stdout
        print_table(COLS, [_cells(r) for r in result.rows], fmt)
    else:
        for line in _head(result):
            say(line)
        drop = ("read", "type", "arch", "earlier run: accept -> predicted", "max", "measured", "params")
        print_table(COLS, [_cells(r) for r in result.rows], Format.table, drop=drop)
        if result.server_command:
            say("llama-server with the best-ranked draft:")
            say(f"  {result.server_command}")
    _print_measured(measured, run_dir, err=fmt == Format.csv)


def _print_measured(measured: list, run_dir: Path | None, err: bool = False) -> None:
    """--measure's ranking: measured speedup with its interval, beside the model's prediction."""
    if not measured:
        return
    say(f"measured (run folder {run_dir}; `specbench report {run_dir}` shows it):", err=err)
    for i, m in enumerate(measured, 1):
        ci = "" if m.speedup_ci_low is None else f" [{m.speedup_ci_low:.2f}, {m.speedup_ci_high:.2f}]"
        acc = "" if m.acceptance is None else f", acceptance {m.acceptance * 100:.0f}%"
        say(f"  {i}. {m.candidate} at g {m.draft_max}: measured {times(m.speedup)}{ci}{acc}; "
            f"predicted at that acceptance {times(m.predicted_speedup)}", err=err)  # fmt: skip

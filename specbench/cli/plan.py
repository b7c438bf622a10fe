"""``specbench plan``: the plan cut into shards, printed as a CI matrix (``--json``) or a table;
``specbench merge``: one run folder from the shards' folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specbench.cli.common import Col, app, check_paths, console, say, say_notes
from specbench.cli.options import Sets
from specbench.cli.output import Format, TableFormat, chosen, print_json, print_table


@app.command("plan")
def plan(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="The run config (YAML).")],
    shards: Annotated[int, typer.Option(min=1, help="How many shards to cut the plan into.")] = 1,
    set_: Sets = None,
    as_json: Annotated[
        bool, typer.Option("--json", help='Print {"include": [...]}, a GitHub Actions matrix as is.')
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="The matrix or table alone, without plan's notes (as `run --quiet`)."
        ),
    ] = False,
    fmt: TableFormat = Format.table,
) -> None:
    """Cut a config's plan into shards, balanced by estimated time, for `run --shard i/N` on N machines."""
    from specbench.execute import preparation
    from specbench.gate.history import plan_estimate
    from specbench.plan.config import load_config
    from specbench.plan.shards import matrix

    check_paths(("CONFIG", config))
    cfg = load_config(config, set_ or ())
    prepared = preparation.prepare(cfg, dry_run=True)
    estimate = plan_estimate(prepared.build.backend)
    result = matrix(prepared.plan, cfg, shards, estimate=estimate.seconds)
    fmt = chosen(fmt, as_json)
    if fmt == Format.json:  # one line: a GitHub Actions output holds it as is
        print_json(result, indent=None)
        return
    headers = ("shard", "cells", "est. time", "runs on")
    rows = [[e["shard"], e["cells"], f"{e['est_s']:.0f} s",
             ", ".join(e["runs_on"]) if isinstance(e.get("runs_on"), list) else e.get("runs_on", "-")]
            for e in result["include"]]  # fmt: skip
    if fmt != Format.table:
        print_table([Col(h) for h in headers], [[s, ", ".join(c), *rest] for s, c, *rest in rows], fmt)
        return
    runs = prepared.plan.measured  # what the shards are dealt
    _, from_history = estimate.total(runs)
    from rich.table import Table

    table = Table(*headers, box=None)
    for shard, cells, *rest in rows:
        table.add_row(shard, "\n".join(cells), *rest)
    console.print(table)
    if quiet:  # a script passing run's flags to every command gets the table and nothing else
        return
    say(f"estimated times: {from_history} of {len(runs)} runs from this machine's history, others from sizes")
    say(
        f"run each with: specbench run {config} --shard I/{shards} --shard-cells '<its cells as JSON>'; "
        "then: specbench merge DIR... --out DIR"
    )


@app.command("merge")
def merge(
    dirs: Annotated[list[Path], typer.Argument(metavar="DIR...", help="The shard run folders.")],
    out: Annotated[Path, typer.Option(metavar="DIR", help="The merged run folder (new).")],
) -> None:
    """Merge the run folders of `run --shard i/N` into one run folder (report, compare, history read it)."""
    from specbench.base.errors import RunError, SpecbenchError
    from specbench.gate.historydb import record_run
    from specbench.results.merge import merge_runs

    check_paths(*(("folder", d) for d in [*dirs, out]))
    result = merge_runs(list(dirs), out)
    say_notes(result.notes)
    for s in result.shards:
        say(f"shard {s.shard}: {s.n_samples} samples from {s.run_id} ({s.hostname or 'unknown host'})")
    say(f"merged {result.n_samples} samples into {result.out}")
    if not result.complete:
        raise RunError(
            f"{len(result.missing_cells)} cell(s) were in no shard given "
            f"({', '.join(result.missing_cells)}): {result.out} is not complete; run the missing shards "
            "and merge again"
        )
    try:
        record_run(result.out)
    except SpecbenchError as exc:  # a damaged or locked database: the merged run is kept all the same
        say(f"warning: {result.out} was not recorded in history: {exc}", err=True)

"""``specbench plan``: the plan cut into shards, printed as a CI matrix (``--json``) or a table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specbench.cli.common import Col, console, say
from specbench.cli.options import Sets
from specbench.cli.output import Format, TableFormat, chosen, print_json, print_table


def plan(
    config: Annotated[
        Path, typer.Argument(metavar="CONFIG", help="The run config (YAML).", show_default=False)
    ],
    shards: Annotated[int, typer.Option("--shards", min=1, help="How many shards to cut the plan into.")] = 1,
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
    from specbench.base.paths import check_path
    from specbench.execute import preparation
    from specbench.gate.history import plan_estimate
    from specbench.plan.shards import matrix

    check_path(config, "CONFIG")
    cfg = preparation.load(config, set_ or ())
    prepared = preparation.prepare(cfg, dry_run=True)
    estimate = plan_estimate(prepared.build.backend)
    result = matrix(prepared.plan, cfg, shards, estimate=estimate.seconds)
    fmt = chosen(fmt, as_json)
    if fmt == Format.json:  # one line: a GitHub Actions output holds it as is
        print_json(result, indent=None)
        return
    if fmt != Format.table:
        rows = [[e["shard"], ", ".join(e["cells"]), f"{e['est_s']:.0f} s",
                 ", ".join(e["runs_on"]) if isinstance(e.get("runs_on"), list) else e.get("runs_on", "-")]
                for e in result["include"]]  # fmt: skip
        print_table([Col(h) for h in ("shard", "cells", "est. time", "runs on")], rows, fmt)
        return
    runs = prepared.plan.measured  # what the shards are dealt
    _, from_history = estimate.total(runs)
    from rich.table import Table

    table = Table("shard", "cells", "est. time", "runs on", box=None)
    for e in result["include"]:
        runs_on = e.get("runs_on", "-")
        table.add_row(e["shard"], "\n".join(e["cells"]), f"{e['est_s']:.0f} s",
                      ", ".join(runs_on) if isinstance(runs_on, list) else runs_on)  # fmt: skip
    console.print(table)
    if quiet:  # a script passing run's flags to every command gets the table and nothing else
        return
    say(f"estimated times: {from_history} of {len(runs)} runs from this machine's history, others from sizes")
    say(
        f"run each with: specbench run {config} --shard I/{shards} --shard-cells '<its cells as JSON>'; "
        "then: specbench merge DIR... --out DIR"
    )


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)

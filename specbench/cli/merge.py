"""``specbench merge``: one run folder from the shard folders of a sharded sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specbench.cli.common import say, say_notes


def merge(
    dirs: Annotated[
        list[Path], typer.Argument(metavar="DIR...", help="The shard run folders.", show_default=False)
    ],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="The merged run folder (new).")],
) -> None:
    """Merge the run folders of `run --shard i/N` into one run folder (report, compare, history read it)."""
    from specbench.base.errors import RunError, SpecbenchError
    from specbench.base.paths import check_path
    from specbench.gate.history import record_run
    from specbench.results.merge import merge_runs

    for d in [*dirs, out]:
        check_path(d, "folder")
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


def register(app: typer.Typer) -> None:
    app.command("merge")(merge)

"""`specbench publish`: a static results site from history and run folders; --serve shows it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specbench.cli.common import app, check_paths, say, say_notes


@app.command("publish")
def publish(
    out: Annotated[Path, typer.Option(metavar="SITE", help="Folder to write the site into.")],
    dbs: Annotated[
        list[Path] | None,
        typer.Option(
            "--db", metavar="FILE", help="History database (repeatable) [default: results/history.sqlite]."
        ),
    ] = None,
    runs: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="DIR",
            help="Run, ab or bisect folders, or folders of them (repeatable) "
            "[default: the history's folder and the paths it recorded].",
        ),
    ] = None,
    serve: Annotated[
        bool, typer.Option("--serve", help="Then serve the site on http://127.0.0.1:PORT/.")
    ] = False,
    port: Annotated[
        int,
        typer.Option(metavar="PORT", help="Port for --serve (0: any free one).", min=0, max=65535),
    ] = 8000,
) -> None:
    """Write a static results site (index, trends, runs, ab, bisect, best settings); opens from file://."""
    from specbench.gate.historydb import default_db
    from specbench.publish.site import PublishError, server
    from specbench.publish.site import publish as write_site

    dbs = list(dbs) if dbs else [default_db()]
    check_paths(*(("--db", db) for db in dbs))
    for root in runs or []:
        check_paths(("--runs", root))
        if not root.is_dir():
            raise PublishError(f"--runs {root}: no such folder; give run folders or a folder of them")
    roots = list(runs) if runs else [db.parent for db in dbs if db.parent.is_dir()]
    done = write_site(dbs, roots, out)
    say_notes(done.notes)
    if done.empty:
        say(f"note: no run recorded in {', '.join(map(str, dbs))} yet; the site says so", err=True)
    say(
        f"site: {done.out / 'index.html'} ({done.pages} pages, {done.runs} runs, {done.series} series, "
        f"index {done.index_bytes / 1024:.0f} KiB, {done.total_bytes / 1e6:.1f} MB in all, "
        f"{done.seconds:.1f} s)"
    )
    if serve:
        httpd = server(done.out, port)
        say(f"serving http://127.0.0.1:{httpd.server_address[1]}/ (Ctrl-C stops)")
        try:
            httpd.serve_forever()
        finally:
            httpd.server_close()

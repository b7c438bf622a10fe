"""``specbench publish``: write the static site (index, trend, run, ab, bisect and best-setting pages),
and ``--serve`` it on http://127.0.0.1:PORT/ for a look (as ``asv preview``).

The site is built beside ``--out`` and moved into place at the end, so a failed publish leaves the
previous one whole; a folder that is not a site this command wrote is refused, never replaced.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from specbench.base.errors import InputError, SpecbenchError
from specbench.base.paths import check_path, nearest_existing, os_problem, shorten
from specbench.base.redact import redact
from specbench.parse.crash import first_line
from specbench.publish import pages
from specbench.publish.folders import REPORT_HTML, RunFolder, scan
from specbench.publish.series import load_series

MARKER = ".specbench-site"
ASSETS = Path(__file__).parent / "assets"


class PublishError(InputError):
    """The site cannot be written where asked."""


@dataclass
class Published:
    out: Path
    pages: int
    index_bytes: int
    total_bytes: int
    runs: int
    series: int
    seconds: float
    empty: bool
    notes: list[str] = field(default_factory=list)


def check_out(out: Path) -> None:
    check_path(out, "--out")
    if out.exists() and not out.is_dir():
        raise PublishError(
            f"--out {shorten(out)} is a file; give a folder for the site (it is made if missing)"
        )
    existing = nearest_existing(out)
    if not existing.is_dir():
        raise PublishError(f"--out {shorten(out)}: {shorten(existing)} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise PublishError(
            f"--out {shorten(out)} is a folder with other files in it; give a new or empty "
            "folder, or one an earlier `specbench publish` wrote"
        )


def publish(dbs: list[Path], roots: list[Path], out: Path) -> Published:
    start = time.perf_counter()
    check_out(out)
    series = load_series(dbs)
    db = ", ".join(str(d) for d in dbs)
    recorded = sorted({p.run_dir for s in series for p in s.points if p.run_dir})
    folders = scan(roots, recorded)
    model = pages.Model(series=series, folders=folders)
    notes = list(folders.notes)
    runs = {p.run_key: p for s in series for p in s.points}
    empty = ""
    if not series:
        empty = (
            f"No run is recorded in {db} yet: `specbench run CONFIG` records each run there "
            "(`specbench history --add RUN_DIR` records one made elsewhere)."
        )
    out_parent = nearest_existing(out)  # the new site is made beside --out, then renamed into place
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name or 'site'}.", dir=out_parent))
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide the site from a web server's user
    except OSError as exc:
        raise PublishError(f"cannot write the site: {os_problem(exc, out_parent)}") from exc
    try:
        files = _write_all(tmp, model, runs, notes, empty, db)
        _swap(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Published(
        out=out,
        pages=files,
        index_bytes=(out / "index.html").stat().st_size,
        total_bytes=sum(p.stat().st_size for p in out.rglob("*") if p.is_file()),
        runs=len(runs),
        series=len(series),
        seconds=time.perf_counter() - start,
        empty=bool(empty),
        notes=notes,
    )


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(redact(text), encoding="utf-8")


def _write_all(tmp: Path, model: pages.Model, runs: dict, notes: list[str], empty: str, db: str) -> int:
    """Every page into ``tmp``; returns how many."""
    folders = model.folders
    shutil.copytree(ASSETS, tmp / "assets")  # the stylesheet and the x-axis toggle: nothing from a network
    (tmp / MARKER).write_text("written by specbench publish\n", encoding="utf-8")
    for machine, pair, method in model.pages:
        _write(tmp, pages.trend_href(machine, pair, method), pages.trend_page(model, machine, pair, method))
    ab_by_key = {a.run.key: a for a in folders.abs}
    ab_paths = {str(a.run.path.resolve()): pages.ab_href(a.run.key) for a in folders.abs}  # for bisect pages
    for a in folders.abs:
        _write(tmp, pages.ab_href(a.run.key), pages.ab_page(a))
    for b in folders.bisects:
        _write(tmp, pages.bisect_href(b), pages.bisect_page(b, ab_paths))
    keys = list(runs) + [k for k in folders.runs if k not in runs]
    for key in keys:
        page = _run_page(tmp, key, runs.get(key), folders.runs.get(key), ab_by_key, notes)
        _write(tmp, pages.run_page(key), page)
    _write(tmp, "best.html", pages.best_page(model))
    summary = (
        f"{len(keys)} runs, {len(model.series)} series from {db}; {len(folders.abs)} ab runs, "
        f"{len(folders.bisects)} bisects; published {time.strftime('%Y-%m-%d %H:%M %Z')}"
    )
    _write(tmp, "index.html", pages.index_page(model, summary, empty, notes))
    return len(model.pages) + len(folders.abs) + len(folders.bisects) + len(keys) + 2  # best and index


def _run_page(tmp: Path, key: str, point, folder: RunFolder | None, ab_by_key: dict, notes: list[str]) -> str:
    """A run's facts and its HTML report (copied, or made from the folder when it has none)."""
    rel = pages.run_page(key).replace(".html", "-report.html")
    report, generated, missing = None, False, ""
    if folder is not None:
        src = folder.path / REPORT_HTML
        try:  # _write redacts: a report written before redaction could hold a credential
            if generated := not src.is_file():
                page = _report_html(folder.path)
            else:
                page = src.read_text(encoding="utf-8", errors="replace")
            _write(tmp, rel, page)
            report = Path(rel).name
        except (SpecbenchError, OSError) as exc:
            missing = f"no report: {first_line(str(exc)) or type(exc).__name__}"
            notes.append(f"run {folder.run_id}: {missing}")
    else:
        where = point.run_dir if point is not None and point.run_dir else "its folder"
        missing = (
            f"run folder missing: {where} is not there any more (moved or deleted). The numbers on the "
            "trend pages come from the history; `specbench publish --runs NEW_PLACE` links it again."
        )
    known = folder or point  # the folder's facts, else the history's
    run_id = known.run_id
    facts = [("run", run_id), ("started", known.started_at), ("llama.cpp", known.commit)]
    if folder is not None:
        facts += [
            ("machine", folder.machine),
            ("folder", str(folder.path)),
            ("made by", folder.made_by or "?"),
        ]
        if folder.builds:
            facts.append(("builds", ", ".join(f"{k} {v[:10]}" for k, v in folder.builds.items())))
    ab = "../" + pages.ab_href(key) if key in ab_by_key else None
    return pages.render(
        "run",
        title=f"run {run_id}",
        run_id=run_id,
        facts=facts,
        report=report,
        generated=generated,
        missing=missing,
        ab=ab,
    )


def _report_html(run_dir: Path) -> str:
    from specbench.analysis.render import html
    from specbench.analysis.report import build_report

    return html(build_report([run_dir]))


def _swap(tmp: Path, out: Path) -> None:
    """Put the new site in place of the old one (which is removed only once the new one is there)."""
    old = None
    try:
        if out.exists():
            old = out.with_name(f".{out.name}.old-{time.time_ns()}")
            out.rename(old)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.rename(out)
    except OSError as exc:
        if old is not None and not out.exists():
            old.rename(out)
        raise PublishError(f"cannot write the site: {os_problem(exc, out)}") from exc
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


class ServeError(InputError):
    """The site cannot be served as asked (a port in use, no site)."""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (the base class's name)
        pass  # one line per request would bury the address line


def server(site: Path, port: int) -> ThreadingHTTPServer:
    """A server on localhost only (never on every interface: the site may name private paths)."""
    handler = functools.partial(_Quiet, directory=str(site))
    try:
        return ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as exc:
        raise ServeError(
            f"--port {port}: cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}); "
            "give another --port (0 picks a free one)"
        ) from exc

"""Every run, recorded in SQLite (``results/history.sqlite``), to follow a cell over time.

``compare`` answers "is this run slower than that one"; history answers "since when". A run is one
row, plus one per (metric, cell, prompt) with its per-repetition values; recording it again replaces
them, so a resumed run is recorded whole. A point's value is the report's figure of the cell
(``analysis.figures``), and a different prompt set is another series. Each run keeps its speed
sentinel's largest move (``speed_moved``) and whether it warned (``speed_warned``), so a trend line
is not read from a slow phase.
"""

from __future__ import annotations

import json
import math
import shlex
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel

from specbench.analysis.figures import Standing, Value, figure, standing
from specbench.base.errors import InputError, SpecbenchError
from specbench.base.formats import json_text
from specbench.base.paths import check_path, nearest_existing, os_problem, results_dir, shorten
from specbench.base.redact import redact_data
from specbench.base.stats import summarize
from specbench.gate.baseline import load_run
from specbench.gate.compare import cell_label, cell_series
from specbench.plan.invocation import Invocation
from specbench.plan.shards import GUESS_LOAD_S, guess_s
from specbench.results import cell
from specbench.results.cell import is_synthetic
from specbench.results.folder import SHARDS
from specbench.results.manifest import MachineFacts, facts_from_manifest
from specbench.results.manifestfile import manifest_data
from specbench.results.metrics import METRICS, choices

# A run is identified by its id (the folder name) and start time: `--out results/ci` reuses the
# name every time, and each of those runs is a point of its own; a resumed run keeps its start.
SCHEMA_VERSION = 2
_SUPERSEDED = "CREATE TABLE IF NOT EXISTS superseded (run_key TEXT PRIMARY KEY, by_run_key TEXT NOT NULL)"
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS runs (
    run_key TEXT PRIMARY KEY, run_id TEXT NOT NULL, started_at TEXT, recorded_at TEXT, run_dir TEXT,
    llama_cpp_commit TEXT, machine TEXT, drivers TEXT, threads TEXT, specbench_version TEXT,
    speed_moved REAL, speed_warned INTEGER
);
{_SUPERSEDED};
CREATE TABLE IF NOT EXISTS cells (
    run_key TEXT NOT NULL REFERENCES runs(run_key) ON DELETE CASCADE,
    metric TEXT NOT NULL, cell TEXT NOT NULL, label TEXT NOT NULL, prompts TEXT NOT NULL,
    prompt_id TEXT NOT NULL, repetitions TEXT NOT NULL, vals TEXT NOT NULL,
    PRIMARY KEY (run_key, metric, cell, prompt_id)
);
"""
MIGRATE_1_2 = (
    "ALTER TABLE runs ADD COLUMN speed_moved REAL; ALTER TABLE runs ADD COLUMN speed_warned INTEGER;"
)


class HistoryError(InputError):
    """The history database cannot be read or written (a damaged file, a folder given as --db)."""


class HistoryPoint(BaseModel):
    """One cell in one run: mean and sd over repetitions of the mean over prompts."""

    label: str
    machine: str
    generation: str  # n_predict, temperature... as compare matches them (part of the series identity)
    prompts: str  # the prompt set (part of the series identity)
    runner: str = "process"  # a server's t/s is not a process's (part of the series identity)
    parallel: int = 1  # requests in flight (part of the series identity)
    # what a baseline t/s timed (docs/timing.md): "same-span" from run folder format 2 on (identity)
    timing: str = "decode-only"
    run_id: str
    started_at: str | None
    commit: str | None
    threads: str | None
    mean: float  # the cell's figure (analysis/figures.py): what report shows for it
    sd: float | None
    low: float | None = None  # the figure's 95% interval (None: one repetition)
    high: float | None = None
    n_reps: int
    n_prompts: int
    # the run's speed sentinel: its largest relative move (None: not measured), and whether it warned
    speed_moved: float | None = None
    speed_warned: bool | None = None
    synthetic: bool = False  # a synth_len cell: drafts accepted at random (a simulation)

    @property
    def standing(self) -> Standing:
        """Whether the point may be called a figure (``analysis.figures.standing``)."""
        return standing(self.mean, self.low, self.high, self.synthetic)


def default_db() -> Path:
    return results_dir() / "history.sqlite"


def _connect(db_path: Path, create: bool = True) -> sqlite3.Connection:
    """Open (with ``create``: make) the history database. Viewing never writes; a damaged file is
    refused before anything touches it (``PRAGMA quick_check``), left as it was for ``.recover``."""
    check_path(db_path, "history database")
    if db_path.is_dir():
        raise HistoryError(
            f"--db {shorten(db_path)} is a folder; give a database file, e.g. "
            f"{shorten(db_path / 'history.sqlite')}"
        )
    existing = nearest_existing(db_path)
    if not existing.is_dir():
        raise HistoryError(f"--db {shorten(db_path)}: {shorten(existing)} is a file, not a folder")
    conn = None
    try:
        if create:
            db_path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(db_path if create else f"file:{db_path}?mode=ro", timeout=30, uri=not create)
        check = conn.execute("PRAGMA quick_check").fetchall()
        if check != [("ok",)]:
            raise HistoryError(_damaged(db_path, "; ".join(str(r[0]) for r in check[:3])))
        conn.execute("PRAGMA foreign_keys = ON")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        empty = version == 0 and not conn.execute("SELECT name FROM sqlite_master").fetchall()
        if empty and not create:
            raise HistoryError(
                f"{shorten(db_path)} is not a specbench history database (an empty file); "
                "`specbench history --add RUN_DIR --db FILE` records into it"
            )
        if empty:
            conn.executescript(SCHEMA + f"PRAGMA user_version = {SCHEMA_VERSION};")
        elif version > SCHEMA_VERSION:  # refused as a newer run folder is: misreading it is worse
            raise HistoryError(
                f"{shorten(db_path)} was written by a newer specbench (history schema {version}; this "
                f"specbench reads schema {SCHEMA_VERSION}): upgrade specbench to read it"
            )
        elif version == 1 and create:  # the sentinel's columns joined in version 2: older runs get NULL
            conn.executescript(MIGRATE_1_2 + f"PRAGMA user_version = {SCHEMA_VERSION};")
        elif version != SCHEMA_VERSION and not (version == 1 and not create):  # viewing reads v1 as is
            raise HistoryError(
                f"{db_path} is not a specbench history database of this version (schema {version}, "
                f"expected {SCHEMA_VERSION}); move it aside to start anew"
            )
    except BaseException as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, OSError):
            raise HistoryError(f"cannot open history database {os_problem(exc, db_path)}") from exc
        if isinstance(exc, sqlite3.Error):
            raise _problem(db_path, exc) from exc
        raise
    return conn


@contextmanager
def _database(db_path: Path, create: bool = True) -> Iterator[sqlite3.Connection]:
    """The open database, closed after; an SQLite error while it is used (a damaged page only a
    query reaches) is one line (``_problem``)."""
    conn = _connect(db_path, create)
    try:
        with closing(conn):
            yield conn
    except sqlite3.Error as exc:
        raise _problem(db_path, exc) from exc


def _damaged(db_path: Path, why: str) -> str:
    f = shlex.quote(str(db_path))  # the commands must run as printed: the whole path
    return (
        f"history database {f} is damaged ({why}); it was left as it was: move it aside (the next "
        f"run starts a new one), or recover what it holds with `sqlite3 {f} .recover | sqlite3 "
        "recovered.sqlite` and give --db recovered.sqlite"
    )


def _problem(db_path: Path, exc: sqlite3.Error) -> HistoryError:
    """An SQLite error as one line that names the file and what to do, by SQLite's error code."""
    name, text, f = getattr(exc, "sqlite_errorname", "") or "", str(exc), shorten(db_path)
    if (
        name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
        or "malformed" in text
        or "not a database" in text
    ):
        return HistoryError(_damaged(db_path, text))
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
        return HistoryError(
            f"history database {f} is in use by another process ({text}); "
            "try again when it is done, or give another --db"
        )
    if name.startswith("SQLITE_FULL"):
        return HistoryError(
            f"cannot write history database {f}: {text}; free disk space and run "
            "`specbench history --add RUN_DIR` to record the run"
        )
    return HistoryError(  # a folder that cannot be written, a read-only file...
        f"cannot open history database {f}: {text}; check that its folder exists and can be "
        "written, or give another --db"
    )


def record_run(run_dir: Path, db_path: Path | None = None, notes: list[str] | None = None) -> int:
    """Record (or re-record) one run folder; returns the number of (metric, cell, prompt) rows.
    A run with no valid value records nothing and leaves what was recorded of it before. ``notes``
    gets what reading the run left out (duplicate samples, a torn last line), for the caller to say."""
    db_path = db_path or default_db()
    side = load_run(Path(run_dir))
    notes = [] if notes is None else notes  # the caller's list, or one no one reads
    notes.extend(side.notes)
    facts = side.facts
    run_key = f"{facts.run_id}@{facts.started_at or ''}"
    threads = sorted({str(s.generation.threads or "default") for s in side.samples})
    machine = facts.machine.describe()
    rows = []
    for metric in METRICS:
        series = cell_series(side, metric)
        prompts_by_cell: dict[str, set[str]] = defaultdict(set)
        for key in series:
            prompts_by_cell[_cell_id(key, machine)].add(key.prompt_id)
        for key, s in series.items():
            if not s.values:
                continue
            # The prompt set is part of the series identity: means over other prompts are not comparable.
            cell = _cell_id(key, machine)
            prompts = ",".join(sorted(prompts_by_cell[cell]))
            mark = _SAME_SPAN if METRICS[metric].baseline_span and facts.timing == "same-span" else ""
            rows.append((run_key, metric, cell + "|" + prompts + mark, s.label, prompts, key.prompt_id,
                         json_text(s.repetitions, None), json_text(s.values, None)))  # fmt: skip
    if not rows:  # a run that measured nothing (yet) must not replace the points it recorded before
        return 0
    shards = _shard_run_keys(Path(run_dir))
    with _database(db_path) as conn, conn:
        conn.execute(_SUPERSEDED)  # a database of an earlier specbench lacks it
        by = conn.execute("SELECT by_run_key FROM superseded WHERE run_key = ?", (run_key,)).fetchone()
        if by is not None:  # its samples are in history already, as part of the merged run
            notes.append(f"{run_dir}: {SUPERSEDED_NOTE} {by[0].split('@')[0]}, recorded in its place")
            return 0
        for shard in shards:  # a merged run supersedes its shards: their samples are its samples
            conn.execute("DELETE FROM runs WHERE run_key = ?", (shard,))
            conn.execute("INSERT OR REPLACE INTO superseded VALUES (?, ?)", (shard, run_key))
        conn.execute("DELETE FROM runs WHERE run_key = ?", (run_key,))
        recorded = datetime.now(UTC).isoformat(timespec="seconds")
        speed = facts.speed
        warned = None if speed.moved is None else int(bool(speed.warnings))
        run_row = (run_key, facts.run_id, facts.started_at, recorded, str(run_dir), facts.llama_cpp_commit,
                   machine, ", ".join(facts.drivers), ",".join(threads), facts.specbench_version,
                   speed.moved, warned)  # fmt: skip
        # every text recorded redacted (a run folder or label holding a URL with a credential)
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", redact_data(run_row))
        conn.executemany("INSERT INTO cells VALUES (?, ?, ?, ?, ?, ?, ?, ?)", map(redact_data, rows))
    return len(rows)


SUPERSEDED_NOTE = "not recorded: this shard is part of the merged run"


def _shard_run_keys(run_dir: Path) -> list[str]:
    """The history run keys of the shards a merged run was made from (their manifests are kept in
    ``shards/<name>/``, ``specbench merge``); none for any other run."""
    keys = []
    for sub in sorted((run_dir / SHARDS).glob("*/")) if (run_dir / SHARDS).is_dir() else []:
        try:
            facts = facts_from_manifest(manifest_data(sub), sub.name)
        except SpecbenchError:
            continue  # a damaged shard manifest: nothing to match it by
        keys.append(f"{facts.run_id}@{facts.started_at or ''}")
    return keys


def _cell_id(key, machine: str) -> str:
    data = key.model_dump(exclude={"prompt_id"})
    # axes added after the first format: at their defaults they are left out, so ids stay those of older runs
    for name in cell.CELL_FIELDS:
        if name not in cell.FIRST_FIELDS and data.get(name, cell.default(name)) == cell.default(name):
            data.pop(name, None)
    return machine + "|" + json_text(data, None, sort_keys=True)


def run_count(db_path: Path | None = None) -> int:
    db_path = db_path or default_db()
    if not db_path.is_file():
        return 0
    with _database(db_path, create=False) as conn:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


def _readable(db_path: Path) -> bool:
    """Whether there is a database to read (none: an empty history); a folder is refused."""
    if db_path.is_dir():
        raise HistoryError(f"--db {shorten(db_path)} is a folder; give a database file")
    return db_path.is_file()


def load_history(
    db_path: Path | None = None, metric: str = "spec_tps", cell: str | None = None
) -> list[HistoryPoint]:
    """Points of every cell whose label contains ``cell`` (case-insensitive), oldest run first."""
    if metric not in METRICS:
        raise HistoryError(f"--metric {metric}: choose one of {choices()}")
    db_path = db_path or default_db()
    if not _readable(db_path):
        return []
    with _database(db_path, create=False) as conn:
        names = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
        columns = "r.speed_moved, r.speed_warned" if "speed_moved" in names else "NULL, NULL"  # version 1
        rows = conn.execute(
            "SELECT c.cell, c.label, c.prompts, r.machine, r.run_key, r.run_id, r.started_at,"
            f" r.llama_cpp_commit, r.threads, c.repetitions, c.vals, {columns}"
            f", c.prompt_id FROM cells c JOIN runs r USING (run_key) WHERE c.metric = ?"
            " ORDER BY r.started_at, r.run_id",
            (metric,),
        ).fetchall()
    grouped: dict[tuple[str, str], HistoryPoint] = {}
    by_rep: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    values: dict[tuple[str, str], list[Value]] = defaultdict(list)
    for row in rows:
        cell_id, label, prompts, machine, run_key, run_id, started, commit, threads, reps, vals = row[:11]
        speed, prompt_id = row[11:13], row[13]  # the run's sentinel: move, warned
        if cell and cell.lower() not in label.lower():
            continue
        point = grouped.get((cell_id, run_key))
        if point is None:
            key = stored_key(cell_id, machine)
            point = HistoryPoint(
                label=label,
                machine=machine,
                generation=generation_text(key),
                **{f: key.get(f, d) for f, d in _HOW_RUN.items()},  # runner, parallel
                timing="same-span" if cell_id.endswith(_SAME_SPAN) else "decode-only",
                prompts=prompts,
                run_id=run_id,
                started_at=started,
                commit=commit,
                threads=threads,
                mean=0.0,
                sd=None,
                n_reps=0,
                n_prompts=0,
                speed_moved=speed[0],
                speed_warned=None if speed[1] is None else bool(speed[1]),
                synthetic=is_synthetic(key),
            )
            grouped[(cell_id, run_key)] = point
        point.n_prompts += 1
        for rep, value in stored_values(reps, vals):
            by_rep[(cell_id, run_key)][rep].append(value)
            values[(cell_id, run_key)].append(Value(prompt_id, rep, value))
    points = []
    for cell_run, point in grouped.items():
        if not by_rep[cell_run]:  # every value of it was unusable (stored_values)
            continue
        summary = summarize([sum(v) / len(v) for _, v in sorted(by_rep[cell_run].items())])
        fig = figure(metric, values[cell_run])  # the report's figure of the cell, from the same values
        points.append(point.model_copy(update=dict(
            mean=fig.value, sd=summary.sd, low=fig.low, high=fig.high, n_reps=summary.n,
        )))  # fmt: skip
    points.sort(key=lambda p: (*series_of(p), p.started_at or "", p.run_id))
    return points


def stored_values(repetitions: str, vals: str) -> list[tuple[int, float]]:
    """A stored row's (repetition, value) pairs that are numbers (an older specbench stored NaN as
    ``null``, which no figure may take in): the one reader of the stored lists."""
    try:
        pairs = zip(json.loads(repetitions), json.loads(vals), strict=True)
        return [(int(r), float(v)) for r, v in pairs if isinstance(v, int | float) and math.isfinite(v)]
    except (ValueError, TypeError):  # not two lists of one length: nothing usable
        return []


class StoredRow(NamedTuple):
    """One (metric, cell, prompt) of one run as stored, with its run's columns (for ``publish``)."""

    metric: str
    cell_id: str
    label: str
    prompts: str
    machine: str
    run_key: str
    run_id: str
    started_at: str | None
    commit: str | None
    run_dir: str | None
    repetitions: str  # JSON lists, parsed by the reader that needs them
    vals: str
    prompt_id: str = ""


def stored_rows(db_path: Path) -> list[StoredRow]:
    """Every stored value, oldest run first, read-only; [] when there is no database file."""
    if not _readable(db_path):
        return []
    with _database(db_path, create=False) as conn:
        rows = conn.execute(
            "SELECT c.metric, c.cell, c.label, c.prompts, r.machine, r.run_key, r.run_id, r.started_at,"
            " r.llama_cpp_commit, r.run_dir, c.repetitions, c.vals, c.prompt_id"
            " FROM cells c JOIN runs r USING (run_key) ORDER BY r.started_at, r.run_id"
        ).fetchall()
    return [StoredRow(*r) for r in rows]


def series_of(p: HistoryPoint) -> tuple[str, str, str, int, str, str, str]:
    """What makes points one series: the same cell measured the same way (compare would match them)."""
    return (p.machine, p.label, p.runner, p.parallel, p.generation, p.prompts, p.timing)


# Marks a stored baseline_tps/speedup cell of a same-span run (older rows timed the decode call only)
_SAME_SPAN = " (same-span)"
_HOW_RUN = {f: cell.default(f) for f in cell.RUN_FIELDS}  # a stored key leaves out one at its default


def span_free(cell_id: str) -> str:
    """A stored cell id without its same-span mark: the id the cell's other metrics (spec_tps,
    acceptance) are stored under, whatever its speedup or baseline t/s timed."""
    return cell_id.removesuffix(_SAME_SPAN)


_GENERATION = ("n_predict", "temperature", "top_k", "seed", "ctx_size")


def stored_key(cell_id: str, machine: str) -> dict:
    """The CellKey fields of a stored cell id (MACHINE|KEY JSON|PROMPTS); {} when unreadable."""
    try:
        key = json.loads(cell_id[len(machine) + 1 :].rsplit("|", 1)[0])
    except ValueError:
        return {}
    return key if isinstance(key, dict) else {}


def generation_text(key: dict) -> str:
    """The generation settings of a stored cell key: runs that differ in them are separate series,
    as ``compare`` (same CellKey) refuses to compare them."""
    return ", ".join(f"{k} {key[k]:g}" if isinstance(key.get(k), float) else f"{k} {key.get(k)}"
                     for k in _GENERATION if key.get(k) is not None)  # fmt: skip


def speeds_on(machine: str, db_path: Path | None = None) -> dict[tuple[str, str, str, int], float]:
    """The t/s this machine last measured for each baseline and speculative cell, by
    (label, generation, runner, parallel): what ``plan --shards`` balances shards with."""
    speeds: dict[tuple[str, str, str, int], float] = {}
    for metric in ("baseline_tps", "spec_tps"):
        for p in load_history(db_path, metric):  # oldest first within a series: the last one wins
            if p.machine == machine and p.mean > 0 and math.isfinite(p.mean):
                speeds[(p.label, p.generation, p.runner, p.parallel)] = p.mean
    return speeds


def history_estimate(speeds: dict[tuple[str, str, str, int], float]) -> Callable[[Invocation], float | None]:
    """An invocation's seconds at the t/s ``speeds_on`` found for its cell (plus the guessed load
    time); None when this machine never measured the cell this way."""

    def estimate(inv: Invocation) -> float | None:
        gen = generation_text(inv.generation.model_dump())
        tps = speeds.get((cell_label(inv), gen, inv.runner, inv.parallel))
        return GUESS_LOAD_S + inv.generation.n_predict / tps if tps else None

    return estimate


class PlanEstimate(NamedTuple):
    """A plan's time as `plan --shards` balances it and `run --dry-run` totals it: each invocation
    at this machine's last measured t/s for its cell, else from its sizes (``guess_s``)."""

    known: Callable[[Invocation], float | None]

    def seconds(self, inv: Invocation) -> float:
        return self.known(inv) or guess_s(inv)

    def total(self, invs: list[Invocation]) -> tuple[float, int]:
        """The invocations' seconds, and how many of them this machine's history knew."""
        return sum(map(self.seconds, invs)), sum(self.known(i) is not None for i in invs)


def plan_estimate(backend: str, db_path: Path | None = None) -> PlanEstimate:
    """The one estimator of a plan's time on this machine (``PlanEstimate``)."""
    return PlanEstimate(history_estimate(speeds_on(MachineFacts.here(backend).describe(), db_path)))


def duration_text(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.2 h``: an estimate's precision, no more."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

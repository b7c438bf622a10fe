"""The history database's storage (``results/history.sqlite``): its SQLite schema, opening it, and
recording a run folder in it; what ``history`` and the site read back is ``gate.history``'s.

A run is one row, plus one per (metric, cell, prompt) with its per-repetition values; recording it
again replaces them, so a resumed run is recorded whole. Each run keeps its speed sentinel's largest
move (``speed_moved``) and whether it warned (``speed_warned``), so a trend line is not read from a
slow phase.
"""

from __future__ import annotations

import shlex
import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import NamedTuple

from specbench.base.errors import InputError, SpecbenchError
from specbench.base.formats import json_text, now_iso
from specbench.base.paths import check_path, nearest_existing, os_problem, results_dir, shorten
from specbench.base.redact import redact_data
from specbench.gate.baseline import load_run
from specbench.gate.comparable import threads_text
from specbench.gate.compare import cell_series
from specbench.results import cell
from specbench.results.folder import SHARDS
from specbench.results.manifest import facts_from_manifest
from specbench.results.manifestfile import manifest_data
from specbench.results.metrics import METRICS

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
# Marks a stored baseline_tps/speedup cell of a same-span run (older rows timed the decode call only)
SAME_SPAN = " (same-span)"
SUPERSEDED_NOTE = "not recorded: this shard is part of the merged run"


class HistoryError(InputError):
    """The history database cannot be read or written (a damaged file, a folder given as --db)."""


def default_db() -> Path:
    return results_dir() / "history.sqlite"


@contextmanager
def database(db_path: Path, create: bool = True) -> Iterator[sqlite3.Connection]:
    """The open database (with ``create``: made, or migrated from version 1), closed after. Viewing
    never writes; a damaged file is refused before anything touches it (``PRAGMA quick_check``), left
    as it was for ``.recover``; an SQLite error, even one only a query reaches (a damaged page), is
    one line (``_problem``)."""
    check_path(db_path, "history database")
    if db_path.is_dir():
        raise HistoryError(
            f"--db {shorten(db_path)} is a folder; give a database file, e.g. "
            f"{shorten(db_path / 'history.sqlite')}"
        )
    existing = nearest_existing(db_path)
    if not existing.is_dir():
        raise HistoryError(f"--db {shorten(db_path)}: {shorten(existing)} is a file, not a folder")
    try:
        if create:
            db_path.parent.mkdir(parents=True, exist_ok=True)
        where = db_path if create else f"file:{db_path}?mode=ro"
        with closing(sqlite3.connect(where, timeout=30, uri=not create)) as conn:
            _check_schema(conn, db_path, create)
            yield conn
    except OSError as exc:
        raise HistoryError(f"cannot open history database {os_problem(exc, db_path)}") from exc
    except sqlite3.Error as exc:
        raise _problem(db_path, exc) from exc


def _check_schema(conn: sqlite3.Connection, db_path: Path, create: bool) -> None:
    """Refuse a damaged, foreign or newer database; with ``create`` make an empty one ours and
    migrate version 1 (whose runs get NULL sentinel columns); viewing reads version 1 as it is."""
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
    elif version == 1 and create:
        conn.executescript(MIGRATE_1_2 + f"PRAGMA user_version = {SCHEMA_VERSION};")
    elif version not in (1, SCHEMA_VERSION):
        raise HistoryError(
            f"{db_path} is not a specbench history database of this version (schema {version}, "
            f"expected {SCHEMA_VERSION}); move it aside to start anew"
        )


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
    damaged = "malformed" in text or "not a database" in text
    if damaged or name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
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
    run_key = facts.run_key
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
            mark = SAME_SPAN if METRICS[metric].baseline_span and facts.timing == "same-span" else ""
            rows.append((run_key, metric, cell + "|" + prompts + mark, s.label, prompts, key.prompt_id,
                         json_text(s.repetitions, None), json_text(s.values, None)))  # fmt: skip
    if not rows:  # a run that measured nothing (yet) must not replace the points it recorded before
        return 0
    shards = _shard_run_keys(Path(run_dir))
    with database(db_path) as conn, conn:
        conn.execute(_SUPERSEDED)  # a database of an earlier specbench lacks it
        by = conn.execute("SELECT by_run_key FROM superseded WHERE run_key = ?", (run_key,)).fetchone()
        if by is not None:  # its samples are in history already, as part of the merged run
            notes.append(f"{run_dir}: {SUPERSEDED_NOTE} {by[0].split('@')[0]}, recorded in its place")
            return 0
        for shard in shards:  # a merged run supersedes its shards: their samples are its samples
            conn.execute("DELETE FROM runs WHERE run_key = ?", (shard,))
            conn.execute("INSERT OR REPLACE INTO superseded VALUES (?, ?)", (shard, run_key))
        conn.execute("DELETE FROM runs WHERE run_key = ?", (run_key,))
        recorded = now_iso()
        speed = facts.speed
        warned = None if speed.moved is None else int(bool(speed.warnings))
        run_row = (run_key, facts.run_id, facts.started_at, recorded, str(run_dir), facts.llama_cpp_commit,
                   machine, ", ".join(facts.drivers), threads_text(side.samples), facts.specbench_version,
                   speed.moved, warned)  # fmt: skip
        # every text recorded redacted (a run folder or label holding a URL with a credential)
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", redact_data(run_row))
        conn.executemany("INSERT INTO cells VALUES (?, ?, ?, ?, ?, ?, ?, ?)", map(redact_data, rows))
    return len(rows)


def _shard_run_keys(run_dir: Path) -> list[str]:
    """The history run keys of the shards a merged run was made from (their manifests are kept in
    ``shards/<name>/``, ``specbench merge``); none for any other run."""
    keys = []
    for sub in sorted((run_dir / SHARDS).glob("*/")):  # none: no such folder
        try:
            facts = facts_from_manifest(manifest_data(sub), sub.name)
        except SpecbenchError:
            continue  # a damaged shard manifest: nothing to match it by
        keys.append(facts.run_key)
    return keys


def _cell_id(key, machine: str) -> str:
    data = key.model_dump(exclude={"prompt_id"})
    # axes added after the first format: at their defaults they are left out, so ids stay those of older runs
    for name in cell.CELL_FIELDS:
        if name not in cell.FIRST_FIELDS and data.get(name, cell.default(name)) == cell.default(name):
            data.pop(name, None)
    return machine + "|" + json_text(data, None, sort_keys=True)


class StoredRow(NamedTuple):
    """One (metric, cell, prompt) of one run as stored, with its run's columns."""

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
    threads: str | None
    speed_moved: float | None  # the run's sentinel (NULL in a version 1 database)
    speed_warned: int | None
    repetitions: str  # JSON lists, parsed by the reader that needs them (``history.stored_values``)
    vals: str
    prompt_id: str


def stored_rows(db_path: Path, metric: str | None = None) -> list[StoredRow]:
    """Every stored value (of ``metric``, or all), oldest run first, read-only; [] when there is no
    database file (a folder is refused)."""
    if db_path.is_dir():
        raise HistoryError(f"--db {shorten(db_path)} is a folder; give a database file")
    if not db_path.is_file():
        return []
    where, args = (" WHERE c.metric = ?", (metric,)) if metric else ("", ())
    with database(db_path, create=False) as conn:
        names = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
        speed = "r.speed_moved, r.speed_warned" if "speed_moved" in names else "NULL, NULL"  # version 1
        rows = conn.execute(
            "SELECT c.metric, c.cell, c.label, c.prompts, r.machine, r.run_key, r.run_id, r.started_at,"
            f" r.llama_cpp_commit, r.run_dir, r.threads, {speed}, c.repetitions, c.vals, c.prompt_id"
            f" FROM cells c JOIN runs r USING (run_key){where} ORDER BY r.started_at, r.run_id",
            args,
        ).fetchall()
    return [StoredRow(*r) for r in rows]

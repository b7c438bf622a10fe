"""`specbench history`: what a point may be called (issue 58): a synthetic cell's speedup is a
simulation and an interval over a factor 2 wide is no figure; the table says so on the point."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from specbench.gate.historydb import record_run
from specbench.results.samplelog import load_samples
from tests.helpers.cli import invoke
from tests.helpers.runs import BASE, SPEC, make_run
from tests.helpers.synthetic import synthetic_run

CI = Path(__file__).resolve().parents[2] / "configs" / "ci.yaml"


def test_synthetic_and_undecided_points_say_so(tmp_path):
    run = synthetic_run(tmp_path, "two", reps=2)
    db = tmp_path / "h.sqlite"
    res = invoke("history", "--add", run, "--db", db, "--metric", "speedup", "--format", "csv", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    lines = [x for x in res.stdout.splitlines() if "smol" in x]
    synthetic = [x for x in lines if "synth_len" in x]
    real = [x for x in lines if "ngram-simple" in x]
    assert synthetic and all("synthetic" in x.split("synth_len", 1)[1] for x in synthetic)
    assert real and all(x.rstrip().count("undecided") == 1 for x in real)
    spec = invoke("history", "--db", db, "--metric", "spec_tps", "--format", "csv", cwd=tmp_path)
    synthetic = [x for x in spec.stdout.splitlines() if "synth_len" in x]
    assert synthetic and all("synthetic" in x.split("synth_len", 1)[1] for x in synthetic)


def _history(tmp_path: Path, runs: int = 30) -> Path:
    """A real history database of ``runs`` recorded runs (a few dozen pages), where `run` puts it."""
    db = tmp_path / "results" / "history.sqlite"
    for i in range(runs):
        record_run(make_run(tmp_path / "runs", f"run{i:02d}", BASE, SPEC, prompts=("p1", "p2", "p3")), db)
    return db


def _damage(db: Path, how: str) -> None:
    data = db.read_bytes()
    if how == "truncated":
        db.write_bytes(data[: len(data) // 2])
        return
    middle = (len(data) // 2) // 4096 * 4096  # a page boundary in the middle, overwritten with 8 KB
    noise = random.Random(58).randbytes(8192)
    db.write_bytes(data[:middle] + noise + data[middle + 8192 :])


@pytest.mark.parametrize("how", ["middle-page", "truncated"])
def test_a_damaged_history_database_is_one_line_everywhere_and_left_as_it_was(tmp_path, how):
    """`history`, `history --add`, `publish` and `run` on a database with a damaged page (or cut
    short): one line that names the file and says to move it aside or `.recover` it, no traceback,
    and the file byte for byte as it was (nothing is written into a damaged database)."""
    db = _history(tmp_path)
    assert db.stat().st_size > 16 * 4096
    _damage(db, how)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    new = make_run(tmp_path / "runs", "new", BASE, SPEC)
    for args in (["history"], ["history", "--add", new], ["history", "--plot", "h.png"],
                 ["publish", "--out", "site"]):  # fmt: skip
        res = invoke(*args, "--db", db, cwd=tmp_path)
        assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr
        line = res.stderr.strip()
        assert len(line.splitlines()) == 1 and line.startswith("error: history database"), line
        assert "is damaged" in line and f"sqlite3 {db} .recover" in line and "move it aside" in line, line
        assert "can be written" not in line
        assert hashlib.sha256(db.read_bytes()).hexdigest() == before, args
    assert sorted(p.name for p in db.parent.iterdir()) == ["history.sqlite"]  # no journal left either


def test_a_run_whose_history_database_is_damaged_warns_and_keeps_its_results(tmp_path, replay):
    """The run is measured and kept (exit 0, its report); the damaged database is not appended to,
    and the run's last words say so in one warning."""
    db = _history(tmp_path, runs=20)
    _damage(db, "middle-page")
    before = db.read_bytes()
    quick = ["--set", "pairing=sequential", "--set", "sentinel=false"]
    res = invoke("run", CI, "--out", tmp_path / "run", *quick, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert len(load_samples(tmp_path / "run")) == 18
    warning = [ln for ln in res.stderr.splitlines() if "not recorded in history" in ln]
    assert len(warning) == 1 and warning[0].startswith("warning: "), res.stderr
    assert "is damaged" in warning[0] and ".recover" in warning[0]
    assert db.read_bytes() == before


def test_a_database_an_older_specbench_filled_with_a_nan_sample_is_read_without_it(tmp_path):
    """Before the sample log's reader refused NaN, `history --add` stored it as null (strict JSON)
    and `history` and `publish` then crashed on every run: a stored value that is no number is
    left out of every figure."""
    import sqlite3

    db = tmp_path / "h.sqlite"
    record_run(make_run(tmp_path, "run1", BASE, SPEC, prompts=("p1", "p2")), db)
    with sqlite3.connect(db) as conn:
        for rowid, vals in conn.execute("SELECT rowid, vals FROM cells").fetchall():
            nulled = json.dumps([None, *json.loads(vals)[1:]])
            conn.execute("UPDATE cells SET vals = ? WHERE rowid = ?", (nulled, rowid))
    for args in (["history", "--db", db], ["publish", "--db", db, "--out", tmp_path / "site"]):
        res = invoke(*args, cwd=tmp_path)
        assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr

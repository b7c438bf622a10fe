"""`specbench history`: what a point may be called (issue 58): a synthetic cell's speedup is a
simulation and an interval over a factor 2 wide is no figure; the table says so on the point."""

from __future__ import annotations

from tests.helpers.cli import invoke
from tests.helpers.synthetic import synthetic_run


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

"""The one reader of samples.jsonl checks each sample's numbers once: a hand-edited or another
tool's log with NaN (valid for Python's json), a negative speed, a zero span over tokens, more
accepted than drafted... is read as an invalid sample with the reason, so no reader averages it in."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from specbench.results.samplelog import load_samples
from tests.helpers.cli import invoke

QUICK = Path(__file__).resolve().parents[1] / "data/runs/quick-cpu"


def edited(tmp_path: Path, line: int, **changes) -> Path:
    """A copy of a recorded real run whose sample on ``line`` (1-based) has ``changes`` (a dotted
    key reaches into ``metrics``), written as Python's json writes NaN and Infinity."""
    run = shutil.copytree(QUICK, tmp_path / "run")
    lines = (run / "samples.jsonl").read_text().splitlines()
    data = json.loads(lines[line - 1])
    for key, value in changes.items():
        target, *rest = key.split(".")
        if rest:
            data[target][rest[0]] = value
        else:
            data[target] = value
    lines[line - 1] = json.dumps(data)  # allow_nan: NaN, Infinity
    (run / "samples.jsonl").write_text("\n".join(lines) + "\n")
    return run


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"tps": math.nan}, "tps is nan"),
        ({"tps": math.inf}, "tps is inf"),
        (
            {"tps": -5.0, "span_s": 0.0, "timed_tokens": 32},
            "tps is negative (-5); 32 tokens in a span of 0 s",
        ),
        ({"span_s": 0.0, "timed_tokens": 32}, "32 tokens in a span of 0 s"),
        ({"acceptance": 1.5}, "acceptance above 1 (1.5)"),
        ({"tokens_per_pass": 0.5}, "tokens_per_pass below 1 (0.5)"),
        ({"metrics.n_accept": 40, "metrics.n_drafted": 29}, "metrics: 40 tokens accepted of 29 drafted"),
        ({"metrics.n_drafted": -3}, "metrics.n_drafted is negative (-3)"),
        ({"n_generated": -1}, "n_generated is negative (-1)"),
        ({"wall_s": math.nan}, "wall_s is nan"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_an_impossible_sample_is_read_as_invalid_with_its_reason(tmp_path, changes, reason):
    run = edited(tmp_path, 2, **changes)  # line 2: a valid speculative sample
    warnings: list[str] = []
    samples = load_samples(run, warnings)
    bad = samples[1]
    assert not bad.valid and bad.status == "invalid"
    assert bad.invalid_reason == f"impossible numbers in the sample log: {reason}"
    assert all(v is None or math.isfinite(v) for v in (bad.tps, bad.wall_s, bad.span_s))  # cleared
    where = run / "samples.jsonl"
    assert warnings == [f"{where}:2: impossible numbers ({reason}): counted as an invalid sample"]
    assert sum(s.valid for s in samples) == len(samples) - 1  # the others are as they were


def test_many_impossible_samples_are_one_note(tmp_path):
    run = edited(tmp_path, 2, tps=math.nan)
    lines = (run / "samples.jsonl").read_text().splitlines()
    lines[2:5] = [json.dumps({**json.loads(x), "tps": -1.0}) for x in lines[2:5]]
    (run / "samples.jsonl").write_text("\n".join(lines) + "\n")
    warnings: list[str] = []
    samples = load_samples(run, warnings)
    assert [s.valid for s in samples[1:5]] == [False] * 4
    assert warnings == [
        f"{run / 'samples.jsonl'}:2: impossible numbers (tps is nan): counted as an invalid "
        "sample; and 3 more such samples"
    ]


def test_a_nan_sample_reaches_no_figure_of_report_history_or_publish(tmp_path):
    """`report` (a traceback before), `history --add` (stored NaN without a word) and `publish`
    (then crashed on every run) read the NaN sample as invalid: their figures are those of the run
    without it."""
    run = edited(tmp_path, 2, tps=math.nan)
    without = shutil.copytree(QUICK, tmp_path / "without")
    lines = (without / "samples.jsonl").read_text().splitlines()
    (without / "samples.jsonl").write_text("\n".join(lines[:1] + lines[2:]) + "\n")
    for args in (["report", run, "-f", "json"], ["compare", without, run]):
        res = invoke(*args, cwd=tmp_path)  # compare: a verdict (0-4), whichever it is
        assert "Traceback" not in res.stderr and res.returncode in range(5), res.stderr
    report = json.loads(invoke("report", run, "-f", "json", cwd=tmp_path).stdout)
    clean = json.loads(invoke("report", without, "-f", "json", cwd=tmp_path).stdout)
    assert [r["spec_tps"] for r in report] == [r["spec_tps"] for r in clean]
    db = tmp_path / "h.sqlite"
    res = invoke("history", "--add", run, "--db", db, cwd=tmp_path)
    assert res.returncode == 0 and "impossible numbers (tps is nan)" in res.stderr, res.stderr
    import sqlite3

    with sqlite3.connect(db) as conn:
        vals = [v for (text,) in conn.execute("SELECT vals FROM cells") for v in json.loads(text)]
    assert vals and all(v is not None and math.isfinite(v) for v in vals)
    res = invoke("publish", "--db", db, "--out", tmp_path / "site", cwd=tmp_path)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr

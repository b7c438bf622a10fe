"""A metric is one declaration (results/metrics.py): one added to the table reaches compare, ab,
bisect --metric, history and the results site, and tokens per target pass is such a metric."""

from __future__ import annotations

import json

import pytest

from specbench.base.errors import InputError
from specbench.gate.ab import paired_compare, pairs
from specbench.gate.baseline import load_run
from specbench.gate.compare import compare, default_metrics
from specbench.gate.history import load_history
from specbench.gate.historydb import record_run
from specbench.publish.site import publish
from specbench.results.metrics import (
    METRICS,
    PAIRED_DEFAULT,
    Metric,
    check_metric,
    choices,
    paired_order,
    site_order,
)
from specbench.results.records import Generation, Sample
from specbench.results.samplelog import append_sample
from tests.helpers.cli import specbench
from tests.helpers.runs import BASE, SPEC, make_run

# Twice the speculative t/s, printed with a mark of its own: where it shows, the table's entry did it.
TWICE = Metric(
    name="twice_tps", unit="2t/s", role="speculative", read=lambda s, _: None if s.tps is None else 2 * s.tps,
    scale="ratio", text=lambda v: f"{v:.1f}~", axis="twice the t/s", title="twice the speculative t/s",
    site_unit="2t/s",
)  # fmt: skip


@pytest.fixture
def twice(monkeypatch):
    monkeypatch.setitem(METRICS, TWICE.name, TWICE)
    return TWICE


def _runs(tmp_path):
    base = make_run(tmp_path, "run1", BASE, SPEC, commit="aaaa")
    slower = {k: [x * 0.7 for x in v] for k, v in SPEC.items()}
    return base, make_run(tmp_path, "run2", BASE, slower, commit="bbbb")


def test_every_metric_is_complete_and_the_defaults_name_table_entries():
    for name, m in METRICS.items():
        assert m.name == name and m.unit and m.axis and m.title and m.site_unit
        assert m.scale in ("ratio", "points") and m.role in ("baseline", "speculative")
        assert m.text(1.5)  # one number format
    for default in (PAIRED_DEFAULT, ("spec_tps", "baseline_tps")):
        assert set(default) <= set(METRICS)
    assert set(site_order()) == set(METRICS) == set(paired_order())


def test_an_unknown_metric_is_refused_in_the_same_words_everywhere(tmp_path, twice):
    assert check_metric("speedup") is METRICS["speedup"] and check_metric("twice_tps") is twice
    said = f"--metric nope: choose one of {choices()}"
    assert "twice_tps" in said
    base, cur = (load_run(run) for run in _runs(tmp_path))
    refusals = [
        lambda: check_metric("nope"),
        lambda: load_history(tmp_path / "history.sqlite", "nope"),
        lambda: pairs([], "nope", "base", "head"),
        lambda: compare(base, cur, ["nope"]),
    ]
    for refuse in refusals:
        with pytest.raises(InputError) as exc:
            refuse()
        assert str(exc.value) == said


def test_a_metric_added_to_the_table_reaches_compare(tmp_path, twice):
    base, cur = _runs(tmp_path)
    cmp = compare(load_run(base), load_run(cur), ["twice_tps"])
    (m,) = cmp.metrics
    assert m.metric == "twice_tps" and m.unit == "2t/s"
    assert {c.status for c in m.cells} == {"fail"} and cmp.exit_code == 1  # 30% slower
    means = sorted(c.decision.mean_base for c in m.cells)  # the values its ``read`` gave
    assert means == pytest.approx(sorted(2 * sum(v) / len(v) for v in SPEC.values()))
    # the command: its number format, title and exit code; the default metrics stay as they were
    r = specbench("compare", base, cur, "--metric", "twice_tps", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "twice_tps (2t/s)" in r.stdout and "~" in r.stdout
    assert "twice_tps" not in default_metrics(load_run(base), load_run(cur))


def test_a_metric_added_to_the_table_reaches_ab_and_bisect(tmp_path, twice):
    def sample(build, rep, tps):
        return Sample(
            build=build, role="speculative", model="t", pair="p", draft="d", method="draft", draft_max=8,
            prompt_id="q", category="code", repetition=rep, generation=Generation(n_predict=64), run_id="r",
            status="ok", valid=True, tps=tps, wall_s=1.0, started_at="2026-11-23T13:00:00",
        )  # fmt: skip

    samples = [
        sample(b, r, t * (1.0 if b == "base" else 0.5))
        for r, t in enumerate(SPEC[8])
        for b in ("base", "head")
    ]
    cmp = paired_compare(samples, "r", "base", "head", ["twice_tps"])
    (d,) = cmp.decisions
    assert d.metric == "twice_tps" and d.status == "fail" and d.ratio == pytest.approx(0.5)
    assert all(d.metric != "twice_tps" for d in paired_compare(samples, "r", "base", "head").decisions)
    # bisect --metric takes its choices from the table: a new one passes the check, a wrong one does not
    config = tmp_path / "c.yaml"
    config.write_text("{}")
    args = ("bisect", config, "--source", tmp_path, "--good", "a", "--bad", "b", "--out", tmp_path / "b")
    wrong = specbench(*args, "--metric", "nope", cwd=tmp_path)
    assert (
        wrong.returncode == 2 and f"choose one of {choices()}" in wrong.stderr and "twice_tps" in wrong.stderr
    )
    taken = specbench(*args, "--metric", "twice_tps", cwd=tmp_path)  # on to the next check: the source
    assert taken.returncode == 2 and "--metric" not in taken.stderr and "not a git checkout" in taken.stderr


def test_a_metric_added_to_the_table_reaches_history_and_the_site(tmp_path, twice):
    db = tmp_path / "history.sqlite"
    for run in _runs(tmp_path):
        record_run(run, db)
    points = load_history(db, "twice_tps")
    spec = load_history(db, "spec_tps")
    assert points and sorted(p.mean for p in points) == pytest.approx(sorted(2 * p.mean for p in spec))
    r = specbench("history", "--db", db, "--metric", "twice_tps", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "twice_tps over runs" in r.stdout and "~" in r.stdout
    site = tmp_path / "site"
    publish([db], [tmp_path], site)
    trends = " ".join(p.read_text() for p in (site / "trend").glob("*.html"))
    assert "twice the speculative t/s" in trends


def _pass_run(root, run_id, tokens_per_pass):
    run = make_run(root, run_id, BASE, {8: SPEC[8]})
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    (run / "samples.jsonl").unlink()
    for s in samples:
        if s["role"] == "speculative":
            s["tokens_per_pass"] = tokens_per_pass[s["repetition"]]
        append_sample(run, Sample.model_validate(s))
    return run


def test_tokens_per_target_pass_is_a_metric_of_compare_ab_history_and_the_site(tmp_path):
    m = METRICS["tokens_per_pass"]
    assert (m.role, m.scale, m.paired) == ("speculative", "ratio", False)
    base = _pass_run(tmp_path, "run1", [3.0, 3.01, 2.99])
    fewer = _pass_run(tmp_path, "run2", [2.0, 2.01, 1.99])  # a third fewer tokens per pass: a regression
    r = specbench("compare", base, fewer, "--metric", "tokens_per_pass", cwd=tmp_path)
    assert r.returncode == 1 and "tokens_per_pass (tokens)" in r.stdout, r.stdout + r.stderr
    same = specbench("compare", base, base, "--metric", "tokens_per_pass", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    db = tmp_path / "history.sqlite"
    record_run(base, db)
    assert [p.mean for p in load_history(db, "tokens_per_pass")] == pytest.approx([3.0], rel=1e-4)
    publish([db], [tmp_path], tmp_path / "site")
    assert "tokens per target pass" in " ".join(
        p.read_text() for p in (tmp_path / "site" / "trend").glob("*")
    )
    samples = [s.model_copy(update={"build": b}) for b in ("base", "head") for s in load_run(base).samples]
    (d,) = [d for d in paired_compare(samples, "r", "base", "head", ["tokens_per_pass"]).decisions]
    assert d.status == "pass" and d.ratio == pytest.approx(1.0)


def test_roles_read_is_what_each_metric_reads_and_what_its_cells_need():
    from specbench.results.bracket import AFTER
    from specbench.results.metrics import roles_read

    assert roles_read(["baseline_tps"]) == {"baseline"}
    assert roles_read(["spec_tps", "acceptance"]) == {"speculative"}
    assert roles_read(["speedup"]) == {"speculative", "baseline", AFTER}
    assert not any("draft" in roles_read([m]) for m in METRICS)  # no metric reads the draft alone
    assert roles_read(list(PAIRED_DEFAULT)) == roles_read(["speedup"])  # ab's default measures every role

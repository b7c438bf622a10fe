"""The cell is declared once (specbench/results/cell.py): a new axis there reaches sample keys,
adaptive rounds, report rows, identities and labels; the baseline of a cell is the one on its build."""

import math

from specbench.analysis.cells import ROW_CELL, ReportRow, run_rows
from specbench.analysis.plots import CELL_KEYS
from specbench.execute.adaptive import cell_states
from specbench.execute.runner import _Outputs
from specbench.gate.compare import cell_label
from specbench.gate.historydb import _cell_id
from specbench.results import cell
from specbench.results.manifest import RunFacts, cell_key
from specbench.results.records import Generation, Sample
from tests.helpers.tableentry import with_entry

NO_OPTIONS = (None,) * len(cell.MODEL_OPTIONS)  # a baseline at llama.cpp's defaults
COMMON = dict(category="chat", generation=Generation(), run_id="r", wall_s=1.0, started_at="t", status="ok")


def sample(role: str, tps: float, rep: int = 0, **kw) -> Sample:
    if role == "speculative":
        kw = dict(pair="smol", draft="smol-q4", method="draft", draft_max=4, ngld=0, **kw)
    kw.setdefault("model", "smol-f32")
    return Sample(role=role, ngl=0, prompt_id="p1", repetition=rep, valid=True, tps=tps, **COMMON, **kw)


def two_builds() -> list[Sample]:
    """Builds a and b: each with its baseline, its draft alone and a speculative cell (b is 2x faster)."""
    out = []
    for build, speed in (("a", 1.0), ("b", 2.0)):
        for rep in range(2):
            out += [
                sample("baseline", 10 * speed, rep, build=build),
                sample("draft", 40 * speed, rep, build=build, model="smol-q4"),
                sample("speculative", 15 * speed * (1 + rep * 0.1), rep, build=build),
            ]
    return out


def test_every_record_that_tells_cells_apart_has_every_axis():
    assert cell.CELL_FIELDS[0] == "build" and "build" in cell.BASELINE_FIELDS
    assert set(cell.CELL_FIELDS) <= set(Sample.model_fields)
    assert set(ROW_CELL) <= set(ReportRow.model_fields)
    key = cell_key(sample("speculative", 1.0, build="a"), RunFacts(run_id="r"))
    assert key.build == "a" and not hasattr(key, "pair")
    assert {k for k in CELL_KEYS if k != "run"} >= {"build", "method", "draft_max", "ngl"}


def test_the_baseline_of_a_cell_is_the_baseline_on_its_build():
    rows = {r.build: r for r in run_rows("r", two_builds()) if r.category == "all"}
    assert set(rows) == {"a", "b"}
    for build, speed in (("a", 1.0), ("b", 2.0)):
        r = rows[build]
        assert math.isclose(r.baseline_tps, 10 * speed) and r.baseline_n == 2  # its own build's baseline only
        assert r.draft_tps == 40 * speed  # and its own build's draft alone
        # the geometric mean of its two paired ratios, 15/10 and 16.5/10
        assert r.speedup is not None and abs(r.speedup - (1.5 * 1.65) ** 0.5) < 1e-9


def test_sample_keys_identities_labels_and_rounds_tell_builds_apart():
    a, b = sample("speculative", 1.0, build="a"), sample("speculative", 1.0, build="b")
    assert a.sample_key() != b.sample_key()
    assert cell_key(a, RunFacts(run_id="r")) != cell_key(b, RunFacts(run_id="r"))
    assert "build=b" in cell_label(b) and "build" not in cell_label(sample("speculative", 1.0))
    # an old sample (no build) keeps the history id it had before the axis existed
    assert '"build"' not in _cell_id(cell_key(sample("speculative", 1.0), RunFacts(run_id="r")), "m")
    assert '"build": "b"' in _cell_id(cell_key(b, RunFacts(run_id="r")), "m")
    states = cell_states(two_builds())
    assert len(states) == 4  # two speculative cells and two baselines, one of each per build
    assert {k for k in states if k[0] == "baseline"} == {
        ("baseline", b, "smol-f32", 0, *NO_OPTIONS, "process", 1, None, 0) for b in "ab"
    }


def test_outputs_are_checked_against_the_baseline_of_the_same_build():
    outputs = _Outputs()
    outputs.add(sample("baseline", 1.0, build="a"), "text of a")
    outputs.add(sample("baseline", 1.0, build="b"), "text of b")
    assert outputs.get(sample("speculative", 1.0, build="b")) == "text of b"
    assert outputs.get(sample("speculative", 1.0, build="c")) is None


def test_the_plan_groups_cells_by_baseline_build_included():
    cells = [cell.Cell(build=b, model="t", method="draft", ngl=n) for b in ("a", "b") for n in (0, 99)]
    groups = cell.group_by(cells, cell.baseline_of)
    assert list(groups) == [
        ("baseline", b, "t", n, *NO_OPTIONS, "process", 1, None, 0) for b in ("a", "b") for n in (0, 99)
    ]


def test_an_axis_added_in_one_place_reaches_everything(tmp_path):
    """A copy of the package with one more axis in the option table (and nothing else changed): sample
    keys, adaptive rounds, report rows (split, each with its baseline), identities and labels all see it."""
    entry = 'LlamaOption("seed2", ("--s2",), Count, "N", "New.", group="axis", sweep=(None,), scope="spec")'
    script = """
        from specbench.analysis.cells import run_rows
        from specbench.analysis.plots import CELL_KEYS
        from specbench.execute.adaptive import cell_states
        from specbench.gate.compare import cell_label
        from specbench.gate.historydb import _cell_id
        from specbench.plan.sweep import Invocation
        from specbench.results.manifest import cell_key
        from specbench.results.manifest import RunFacts
        from specbench.results.records import Generation, Sample

        common = dict(category="chat", generation=Generation(), run_id="r", wall_s=1.0, started_at="t",
                      status="ok", valid=True, model="t", ngl=0, prompt_id="p", repetition=0)
        spec = dict(role="speculative", pair="x", method="ngram-simple")
        samples = [Sample(role="baseline", tps=10.0, **common),
                   Sample(**spec, seed2=0, tps=12.0, **common), Sample(**spec, seed2=1, tps=14.0, **common)]
        assert "seed2" in Invocation.model_fields
        assert samples[1].sample_key() != samples[2].sample_key()
        assert len(cell_states(samples)) == 3
        rows = sorted(run_rows("r", samples), key=lambda r: r.seed2)
        assert [(r.seed2, r.speedup) for r in rows if r.category == "all"] == [(0, 1.2), (1, 1.4)]
        k0, k1 = (cell_key(s, RunFacts(run_id="r")) for s in samples[1:])
        assert k0 != k1 and k1.seed2 == 1
        old = cell_key(Sample(**spec, tps=1.0, **common), RunFacts(run_id="r"))
        assert '"seed2": 1' in _cell_id(k1, "m") and "seed2" not in _cell_id(old, "m")
        assert "seed2=1" in cell_label(samples[2]) and "seed2" in CELL_KEYS
        from specbench.gate.baseline import Side
        from specbench.gate.comparable import differing_axes
        sides = [Side(ref=r, kind="run", facts=RunFacts(run_id=r), samples=[s])
                 for r, s in zip("ab", samples[1:])]
        assert differing_axes(*sides) == ["seed2: 0 -> 1"]  # compare's "no common cell" names it
        print("ok")
        """
    done = with_entry(tmp_path, entry, script)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"

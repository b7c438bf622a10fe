"""Matching and decisions of `specbench compare` over run folders written with the store's own
types (real runs are compared end to end in tests/cli/test_compare.py)."""

import json
from pathlib import Path

import pytest

from specbench.gate.baseline import InputError, load_run
from specbench.gate.comparable import NotComparable
from specbench.gate.compare import cell_series, compare
from specbench.gate.regression import Status
from tests.helpers.runs import BASE, DRAFT_SHA, SPEC, make_run


def test_same_numbers_pass(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC, prompts=("p1", "p2"))
    slower_spec = {k: [x * 0.99 for x in v] for k, v in SPEC.items()}
    b = make_run(tmp_path, "run2", [x * 1.01 for x in BASE], slower_spec, prompts=("p1", "p2"))
    cmp = compare(load_run(a), load_run(b))
    assert cmp.exit_code == 0
    spec = next(m for m in cmp.metrics if m.metric == "spec_tps")
    assert len(spec.cells) == 4  # 2 draft_max x 2 prompts
    assert all(c.status == Status.PASS for c in spec.cells)
    assert spec.geomean_ratio == pytest.approx(0.99, rel=1e-9)
    base = next(m for m in cmp.metrics if m.metric == "baseline_tps")
    assert base.geomean_ratio == pytest.approx(1.01, rel=1e-9)


def test_slower_cells_fail_and_are_named(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC)
    b = make_run(tmp_path, "run2", BASE, {4: SPEC[4], 8: [x * 0.8 for x in SPEC[8]]})
    cmp = compare(load_run(a), load_run(b), metrics=["spec_tps"])
    assert cmp.exit_code == 1
    [failed] = cmp.failed
    assert "draft_max=8" in failed.label and failed.prompt_id == "p1"
    assert failed.decision.change == pytest.approx(-0.2)
    assert failed.decision.p_value < 0.05
    assert cmp.metrics[0].geomean_ratio == pytest.approx(0.8**0.5)


def test_speedup_pairs_each_repetition_with_its_baseline(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC)
    series = cell_series(load_run(a), "speedup")
    [cell4] = [s for k, s in series.items() if k.draft_max == 4]
    assert cell4.values == pytest.approx([s / b for s, b in zip(SPEC[4], BASE, strict=True)])
    # The same speeds with a slower baseline: the speedup rose and is reported as an improvement.
    b = make_run(tmp_path, "run2", [x * 0.8 for x in BASE], SPEC)
    cmp = compare(load_run(a), load_run(b), metrics=["speedup"])
    assert {c.status for c in cmp.metrics[0].cells} == {Status.IMPROVED}
    assert cmp.exit_code == 0


def test_threads_and_commit_differ_but_match_and_are_shown(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC, threads=2, commit="aaaa1111")
    b = make_run(tmp_path, "run2", [x * 0.6 for x in BASE], SPEC, threads=1, commit="bbbb2222")
    cmp = compare(load_run(a), load_run(b), metrics=["baseline_tps"])
    assert "threads: 2 -> 1" in cmp.differences
    assert "llama.cpp commit: aaaa1111 -> bbbb2222" in cmp.differences
    assert cmp.exit_code == 1 and cmp.failed[0].label == "smol-f32 baseline"


def test_cells_on_one_side_are_listed(tmp_path):
    a = make_run(tmp_path, "run1", BASE, {4: SPEC[4]})
    b = make_run(tmp_path, "run2", BASE, {4: SPEC[4], 16: SPEC[8]})
    cmp = compare(load_run(a), load_run(b), metrics=["spec_tps"])
    statuses = {c.label: c.status for c in cmp.metrics[0].cells}
    assert statuses == {"smol draft draft_max=4": Status.PASS, "smol draft draft_max=16": "only_current"}
    assert cmp.exit_code == 0


def test_a_cell_that_stopped_working_fails(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC)
    b = make_run(tmp_path, "run2", BASE, SPEC, status="failed")
    cmp = compare(load_run(a), load_run(b), metrics=["spec_tps"])
    assert cmp.exit_code == 1
    assert all("no valid value in current (3 failed)" in c.reason for c in cmp.failed)


def test_zero_or_negative_tps_is_no_value_on_either_side(tmp_path):
    """A hand-edited or broken side (0 t/s, -60 t/s) is not a measurement: the cell fails and says
    why, never "one repetition" or "+198% at worst" (the sample log's reader marks such samples
    invalid, with the reason: results/records.impossible)."""
    a = make_run(tmp_path, "run1", [0.0] * 5, SPEC)
    b = make_run(tmp_path, "run2", BASE, {4: [-45.0, -44.6, -45.3], 8: SPEC[8]})
    base_cmp = compare(load_run(a), load_run(b), metrics=["baseline_tps"])
    assert base_cmp.exit_code == 1 and "no valid value in baseline (5 invalid)" in base_cmp.failed[0].reason
    spec = compare(load_run(b), load_run(a), metrics=["spec_tps"])
    assert spec.exit_code == 1
    assert any("no valid value in baseline (3 invalid)" in c.reason for c in spec.failed)
    assert all(
        "impossible numbers" in (s.invalid_reason or "") for s in load_run(a).samples if s.role == "baseline"
    )


def test_a_baseline_every_shard_measured_counts_once_per_repetition(tmp_path):
    """A merged sharded run: shards 1/2 and 2/2 each ran the target's baseline; compared with an
    unsharded run it has 3 values a side, not 6 (which would narrow its interval falsely)."""
    whole = make_run(tmp_path, "run1", BASE, SPEC)
    merged = make_run(tmp_path, "run2", BASE, {4: SPEC[4]})
    path = merged / "samples.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    second = [dict(x, shard="2/2", tps=x["tps"] * 1.01) for x in lines if x["role"] == "baseline"]
    second += [
        dict(x, shard="2/2", draft_max=8, tps=t)
        for x, t in zip([x for x in lines if x["role"] == "speculative"], SPEC[8], strict=True)
    ]
    path.write_text(
        "".join(json.dumps(dict(x, shard="1/2")) + "\n" for x in lines)
        + "".join(json.dumps(x) + "\n" for x in second)
    )
    cmp = compare(load_run(whole), load_run(merged), metrics=["baseline_tps", "spec_tps"])
    decisions = [c.decision for m in cmp.metrics for c in m.cells]
    assert decisions and all(d.n_cur == d.n_base == 3 for d in decisions)


def test_too_noisy_to_decide_is_its_own_outcome_exit_3(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC)
    b = make_run(tmp_path, "run2", [24.0, 30.0, 36.0], SPEC)  # same mean, CV 20%
    loose = compare(load_run(a), load_run(b), metrics=["baseline_tps"])
    cell = loose.metrics[0].cells[0]
    assert cell.status == Status.TOO_NOISY and "too noisy to decide" in cell.reason
    assert cell.decision.mde > 0.05 and loose.metrics[0].count("pass") == 0
    assert loose.exit_code == 3 and not loose.failed and loose.verdict == "undecided"
    # --strict fails warnings; a cell too noisy to decide is not a regression: still exit 3
    strict = compare(load_run(a), load_run(b), metrics=["baseline_tps"], strict=True)
    assert strict.exit_code == 3 and not strict.failed
    allowed = compare(load_run(a), load_run(b), metrics=["baseline_tps"], allow_noisy=True)
    assert allowed.exit_code == 0
    wide = compare(load_run(a), load_run(b), metrics=["baseline_tps"], threshold=0.9)
    assert wide.metrics[0].cells[0].status == Status.WARN  # a 90% gate can be decided: noisy, unchanged


def test_a_fail_beside_too_noisy_cells_fails(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC)
    b = make_run(tmp_path, "run2", [24.0, 30.0, 36.0], {4: SPEC[4], 8: [x * 0.8 for x in SPEC[8]]})
    cmp = compare(load_run(a), load_run(b), allow_noisy=True)
    assert cmp.exit_code == 1 and [c.label for c in cmp.failed] == ["smol draft draft_max=8"]
    assert len(cmp.undecided) == 1


def test_two_repetition_ten_percent_drop_fails_not_too_noisy(tmp_path):
    """Issue 24: -10% with 2 repetitions a side passed as "too noisy"; 1 repetition failed."""
    a = make_run(tmp_path, "run1", [49.52, 50.48], {4: [49.52, 50.48]})
    b = make_run(tmp_path, "run2", [44.52, 45.48], {4: [44.52, 45.48]})
    cmp = compare(load_run(a), load_run(b))
    assert cmp.exit_code == 1 and {c.status for m in cmp.metrics for c in m.cells} == {Status.FAIL}
    one_a = make_run(tmp_path, "run3", [49.52], {4: [49.52]})
    one_b = make_run(tmp_path, "run4", [44.52], {4: [44.52]})
    assert compare(load_run(one_a), load_run(one_b)).exit_code == 1


def test_a_copy_with_speculative_tps_divided_by_100_fails(tmp_path):
    """Issue 24: a real run against a copy of itself with speculative t/s x 0.01 passed."""
    import shutil

    run = shutil.copytree(Path(__file__).parents[1] / "data" / "runs" / "quick-cpu", tmp_path / "slow")
    lines = []
    for line in (run / "samples.jsonl").read_text().splitlines():
        sample = json.loads(line)
        if sample["role"] == "speculative" and sample.get("tps"):
            sample["tps"] *= 0.01
        lines.append(json.dumps(sample))
    (run / "samples.jsonl").write_text("\n".join(lines) + "\n")
    original = Path(__file__).parents[1] / "data" / "runs" / "quick-cpu"
    cmp = compare(load_run(original), load_run(run), metrics=["spec_tps"])
    assert cmp.exit_code == 1 and cmp.metrics[0].geomean_ratio == pytest.approx(0.01)
    assert not any(c.status == Status.PASS for c in cmp.metrics[0].cells)
    assert cmp.metrics[0].count("fail") >= 5  # of 6: a cell with a 24% CV on 2 values may stay undecided


def test_an_empty_side_is_nothing_to_compare(tmp_path):
    """An interrupted run with no speculative sample: nothing to compare (exit 4), never a pass,
    on either side and with --allow-missing; a regression elsewhere still fails (exit 1)."""
    full = make_run(tmp_path, "run1", BASE, SPEC)
    cut = make_run(tmp_path, "run2", BASE, {})
    for base, cur in ((cut, full), (full, cut)):
        cmp = compare(load_run(base), load_run(cur), allow_missing=True)
        assert cmp.exit_code == 4 and cmp.verdict == "nothing_to_compare"
        side = "baseline" if base == cut else "current"
        assert cmp.nothing == [f"spec_tps: the {side} ({cut}, complete, 3 samples) has no speculative sample"]
    slow_base = make_run(tmp_path, "run3", [x * 0.5 for x in BASE], {})
    assert compare(load_run(full), load_run(slow_base)).exit_code == 1
    nothing_at_all = make_run(tmp_path, "run4", [], {})
    (nothing_at_all / "samples.jsonl").touch()  # interrupted before its first sample
    cmp = compare(load_run(full), load_run(nothing_at_all))
    assert cmp.exit_code == 4 and len(cmp.nothing) == 2


def test_different_runners_or_parallel_are_not_comparable(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC)
    b = make_run(tmp_path, "run2", BASE, SPEC, runner="server")
    with pytest.raises(NotComparable, match=r"different runners \(process vs server\)") as exc:
        compare(load_run(a), load_run(b))
    assert exc.value.exit_code == 2
    c = make_run(tmp_path, "run3", BASE, SPEC, runner="server", parallel=2)
    with pytest.raises(NotComparable, match=r"different parallel \(1 vs 2\)"):
        compare(load_run(b), load_run(c))


def test_strict_turns_warnings_into_failures(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC)
    b = make_run(tmp_path, "run2", [24.0, 30.0, 36.0], SPEC)  # same mean, CV 20%
    loose = compare(load_run(a), load_run(b), metrics=["baseline_tps"], threshold=0.9)
    assert loose.metrics[0].cells[0].status == Status.WARN and loose.exit_code == 0
    strict = compare(load_run(a), load_run(b), metrics=["baseline_tps"], strict=True, threshold=0.9)
    assert strict.exit_code == 1


def test_different_machine_is_not_comparable(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC, cpu="AMD EPYC 7763")
    b = make_run(tmp_path, "run2", BASE, SPEC, cpu="Apple M2")
    with pytest.raises(NotComparable, match="different machine") as exc:
        compare(load_run(a), load_run(b))
    assert exc.value.exit_code == 2
    c = make_run(tmp_path, "run3", BASE, SPEC, cpu="AMD EPYC 7763", gpus=["NVIDIA GeForce RTX 4090"])
    with pytest.raises(NotComparable, match="different GPUs"):
        compare(load_run(a), load_run(c))


@pytest.mark.parametrize("env", [{}, None, "broken"])
def test_a_side_whose_machine_is_unknown_is_not_the_same_machine(tmp_path, env):
    """A damaged manifest (env emptied, null or not an object) must not pass the machine check."""
    a = make_run(tmp_path, "run1", BASE, SPEC)
    b = make_run(tmp_path, "run2", BASE, SPEC)
    data = json.loads((b / "manifest.json").read_text())
    data["env"] = env
    (b / "manifest.json").write_text(json.dumps(data))
    for base, cur in ((a, b), (b, a)):
        with pytest.raises(NotComparable, match="does not say which machine measured it") as exc:
            compare(load_run(base), load_run(cur))
        assert exc.value.exit_code == 2 and str(b) in str(exc.value)


def test_different_models_are_not_comparable(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC)
    b = make_run(tmp_path, "run2", BASE, SPEC, models={"smol-f32": "c" * 64, "smol-q4": DRAFT_SHA})
    with pytest.raises(NotComparable, match="different models"):
        compare(load_run(a), load_run(b))


def test_different_generation_is_not_comparable(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC, n_predict=48)
    b = make_run(tmp_path, "run2", BASE, SPEC, n_predict=64)
    with pytest.raises(NotComparable, match=r"different n_predict \(48 vs 64\)"):
        compare(load_run(a), load_run(b))


def test_acceptance_drop_at_temperature_zero_fails(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC, acceptance=0.80)
    b = make_run(tmp_path, "run2", BASE, SPEC, acceptance=0.75)
    cmp = compare(load_run(a), load_run(b), metrics=["acceptance"])
    assert cmp.exit_code == 1 and len(cmp.failed) == 2
    assert cmp.failed[0].decision.change == pytest.approx(-5.0)


def test_cells_missing_from_the_current_run_fail_unless_allowed(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC, prompts=("p1", "p2"))
    b = make_run(tmp_path, "run2", BASE, {4: SPEC[4]}, prompts=("p1",))
    cmp = compare(load_run(a), load_run(b), metrics=["spec_tps"])
    assert cmp.exit_code == 1
    missing = [c for c in cmp.failed if c.status == "only_baseline"]
    assert len(missing) == 3 and all("missing from the current run" in c.reason for c in missing)
    assert compare(load_run(a), load_run(b), metrics=["spec_tps"], allow_missing=True).exit_code == 0


def test_a_cell_with_no_valid_sample_on_either_side_fails(tmp_path):
    """Two runs whose every speculative sample failed: nothing was measured, the gate must not pass."""
    a = make_run(tmp_path, "run1", BASE, SPEC, status="timeout")
    b = make_run(tmp_path, "run2", BASE, SPEC, status="timeout")
    cmp = compare(load_run(a), load_run(b), metrics=["spec_tps"])
    assert cmp.exit_code == 1 and len(cmp.failed) == 2
    assert all(
        "no valid value in baseline (3 timeout); no valid value in current" in c.reason for c in cmp.failed
    )
    # only the baseline side empty: also nothing compared
    c = make_run(tmp_path, "run3", BASE, SPEC)
    assert compare(load_run(a), load_run(c), metrics=["spec_tps"]).exit_code == 1


def test_cells_sort_numerically(tmp_path):
    spec = {16: SPEC[8], 4: SPEC[4], 8: SPEC[8]}
    a, b = make_run(tmp_path, "run1", BASE, spec), make_run(tmp_path, "run2", BASE, spec)
    labels = [c.label for c in compare(load_run(a), load_run(b), metrics=["spec_tps"]).metrics[0].cells]
    assert labels == [f"smol draft draft_max={n}" for n in (4, 8, 16)]


def test_a_decode_only_baseline_is_not_compared_with_a_same_span_one(tmp_path):
    """Run folders before format 2 timed baseline t/s inside llama.cpp's decode call only: its
    baseline_tps and speedup mean something else, so compare refuses them (spec_tps alone is fine)."""
    old = load_run(make_run(tmp_path, "run1", BASE, SPEC))
    new = load_run(make_run(tmp_path, "run2", BASE, SPEC, format_version=2))
    assert (old.facts.timing, new.facts.timing) == ("decode-only", "same-span")
    with pytest.raises(InputError, match=r"not comparable: .*run1.* decode call only.*docs/timing.md"):
        compare(old, new)
    with pytest.raises(InputError, match="speedup"):
        compare(new, old, metrics=("speedup",))
    assert compare(old, new, metrics=("spec_tps",)).exit_code == 0
    both_new = load_run(make_run(tmp_path, "run3", BASE, SPEC, format_version=2))
    assert compare(new, both_new).exit_code == 0

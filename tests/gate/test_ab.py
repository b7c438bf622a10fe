"""The paired gate over a multi-build run: which values pair up, which build is which."""

from __future__ import annotations

import math
import random

import pytest

from specbench.gate.ab import (
    BuildChoiceError,
    builds_in,
    choose_builds,
    paired_compare,
    pairs,
    parse_build_spec,
    undecided_samples,
)
from specbench.gate.decision import Status
from specbench.results.records import Generation, Sample

if "build" in Sample.model_fields:
    BSample = Sample
else:  # until the cell declaration carries `build`

    class BSample(Sample):
        build: str | None = None


def sample(build, role, prompt, rep, tps, acceptance=None, status="ok", **kw) -> Sample:
    spec = role == "speculative"
    return BSample(
        build=build, role=role, model="smol_f32", pair="smol" if spec else None,
        draft="smol_q4" if spec else None, method="draft" if spec else "none", draft_max=8 if spec else None,
        prompt_id=prompt, category="code", repetition=rep, generation=Generation(n_predict=64),
        run_id="r", status=status, valid=status == "ok", tps=tps, acceptance=acceptance, wall_s=1.0,
        started_at="2026-11-23T13:00:00", **kw,
    )  # fmt: skip


def run(head_base=1.0, head_spec=1.0, reps=6, prompts=("p1", "p2"), seed=0, labels=("base", "head")):
    """An interleaved two-build run (ABBA order) with 1% noise; head's t/s scaled as given."""
    rng = random.Random(seed)
    out = []
    for rep in range(reps):
        for prompt in prompts:
            order = labels if rep % 2 == 0 else labels[::-1]
            for b in order:
                bt = 56 * math.exp(rng.gauss(0, 0.01)) * (head_base if b == labels[1] else 1)
                st = 70 * math.exp(rng.gauss(0, 0.01)) * (head_spec if b == labels[1] else 1)
                out.append(sample(b, "baseline", prompt, rep, bt))
                out.append(sample(b, "speculative", prompt, rep, st, acceptance=0.9))
    return out


def test_builds_come_in_config_order_and_base_head_labels_win():
    samples = run(labels=("old", "new"))
    assert builds_in(samples) == ["old", "new"]
    assert choose_builds(["old", "new"], None, None) == ("old", "new")
    assert choose_builds(["head", "base"], None, None) == ("base", "head")
    assert choose_builds(["a", "b", "c"], "c", "a") == ("c", "a")
    assert choose_builds(["a", "b"], None, "a") == ("b", "a")


@pytest.mark.parametrize(
    "labels, base, head, words",
    [
        (["a", "b", "c"], None, None, "pass --base LABEL --head LABEL"),
        (["a", "b"], "x", None, "--base x: no build of that label"),
        (["a", "b"], "a", "a", "both a"),
        (["a"], None, None, "needs a run of two"),
    ],
)
def test_bad_build_choices_are_one_line_errors(labels, base, head, words):
    with pytest.raises(BuildChoiceError, match=words):
        choose_builds(labels, base, head)


def test_pairs_are_prompt_and_repetition_on_both_builds():
    samples = run(reps=3)
    samples.append(sample("head", "baseline", "p1", 0, 56.0))  # a duplicated line: replaces, not added
    samples.append(sample("head", "baseline", "p1", 3, 56.0))  # only on head: no pair
    samples.append(sample("base", "baseline", "p2", 3, 0.0, status="failed"))
    (cp,) = pairs(samples, "baseline_tps", "base", "head").values()
    assert len(cp.base) == len(cp.head) == 6 and "baseline" in cp.label
    assert (cp.n_base, cp.n_head) == (6, 7)


def test_a_head_that_stopped_working_fails():
    samples = [s for s in run() if not (s.build == "head" and s.role == "speculative")]
    samples += [sample("head", "speculative", "p1", 0, None, status="failed")]
    cmp = paired_compare(samples, "r", metrics=["spec_tps"])
    assert [d.decision for d in cmp.decisions] == ["fail"] and "no valid sample" in cmp.decisions[0].reason


def test_build_specs(tmp_path):
    assert parse_build_spec(f"{tmp_path}@v1.2", "--base") == (str(tmp_path.resolve()), "v1.2")
    assert parse_build_spec(str(tmp_path), "--base") == (str(tmp_path.resolve()), None)
    assert parse_build_spec("@HEAD~1", "--head") == (None, "HEAD~1")
    bad = [
        ("", "empty"),
        (f"{tmp_path}@", "nothing after"),
        ("/no/such@x", "not a folder"),
        (f"{tmp_path}@-x", "not a git ref"),
    ]
    for text, words in bad:
        with pytest.raises(BuildChoiceError, match=words):
            parse_build_spec(text, "--base")


def test_an_a_a_run_passes_and_a_slower_head_fails_baseline_only():
    same = paired_compare(run(), "r")
    assert same.exit_code == 0 and same.count(Status.FAIL) == 0
    assert {d.metric for d in same.decisions} == {"baseline_tps", "spec_tps", "speedup", "acceptance"}
    slow = paired_compare(run(head_base=0.9), "r", threshold=0.05)
    by = {d.metric: d for d in slow.decisions}
    assert by["baseline_tps"].decision == "fail" and by["baseline_tps"].n_pairs == 12
    assert by["spec_tps"].decision == "pass"
    assert by["speedup"].decision == "improved"  # spec unchanged over a slower baseline
    assert slow.exit_code == 1


def test_too_few_pairs_are_undecided_exit_3_unless_allowed():
    cmp = paired_compare(run(reps=1), "r", metrics=["spec_tps"])  # 2 pairs: a t interval of ±13%
    assert [d.decision for d in cmp.decisions] == ["undecided"] and cmp.exit_code == 3
    assert cmp.model_dump(mode="json")["decisions"][0]["decision"] == "undecided"
    allowed = paired_compare(run(reps=1), "r", metrics=["spec_tps"], allow_noisy=True)
    assert allowed.exit_code == 0 and allowed.decisions[0].decision == "undecided"
    # more data never turns a fail into a pass: -99% fails from 2 pairs on, allowed noise or not
    plain = paired_compare(run(reps=1, head_spec=0.01), "r", metrics=["spec_tps"], allow_noisy=True)
    assert plain.exit_code == 1 and plain.decisions[0].decision == "fail"


def test_a_head_at_zero_tps_fails_and_a_cell_head_never_ran_is_missing():
    samples = [s for s in run() if not (s.build == "head" and s.role == "speculative")]
    zero = samples + [
        sample("head", "speculative", p, r, 0.0, acceptance=0.0) for p in ("p1", "p2") for r in range(6)
    ]
    cmp = paired_compare(zero, "r", metrics=["spec_tps"])
    assert cmp.decisions[0].decision == "fail" and "0 t/s" in cmp.decisions[0].reason and cmp.exit_code == 1
    cut = paired_compare(samples, "r", metrics=["spec_tps"])  # head never ran it: the run was cut short
    assert cut.decisions[0].decision == "fail" and "--allow-missing" in cut.decisions[0].reason
    allowed = paired_compare(samples, "r", metrics=["spec_tps"], allow_missing=True)
    assert allowed.exit_code == 0 and "not measured on head" in allowed.decisions[0].reason


def test_nothing_to_compare_is_exit_4_never_a_pass():
    no_spec = [s for s in run() if s.role == "baseline"]  # interrupted before any speculative sample
    cmp = paired_compare(no_spec, "r")
    assert cmp.exit_code == 4 and any("spec_tps" in n for n in cmp.nothing)
    assert paired_compare(no_spec, "r", metrics=["baseline_tps"]).exit_code == 0
    slow_no_spec = [s for s in run(head_base=0.5) if s.role == "baseline"]
    assert paired_compare(slow_no_spec, "r").exit_code == 1  # a fail still wins over nothing
    empty = paired_compare([], "r")
    assert empty.exit_code == 4 and empty.nothing == ["the run has no sample yet"]


def test_undecided_samples_are_those_of_open_cells():
    few = run(reps=1)  # 2 pairs a cell: nothing can be decided yet
    assert len(undecided_samples(few, "base", "head", ["spec_tps"], 0.05)) == sum(
        s.role == "speculative" for s in few
    )
    enough = run(reps=6)
    assert undecided_samples(enough, "base", "head", ["baseline_tps", "spec_tps"], 0.05) == []
    # bisect's run against bad wants "improved": there a passing cell is still open
    open_ = frozenset({Status.TOO_NOISY, Status.PASS})
    assert len(undecided_samples(enough, "base", "head", ["baseline_tps"], 0.05, open_)) == sum(
        s.role == "baseline" for s in enough
    )
    faster = run(reps=6, head_base=1.3)
    assert undecided_samples(faster, "base", "head", ["baseline_tps"], 0.05, open_) == []


def test_no_cell_gets_another_round_once_one_has_failed():
    """A fail is the verdict whatever the open cells would say: the rounds stop there."""
    failing = run(reps=1, head_spec=0.5)  # 2 pairs a cell: spec_tps fails, baseline_tps is still open
    decided = {d.metric: d.decision for d in paired_compare(failing, "r").decisions}
    assert decided["spec_tps"] == "fail" and decided["baseline_tps"] == "undecided"
    assert len(undecided_samples(failing, "base", "head", ["baseline_tps"], 0.05)) == sum(
        s.role == "baseline" for s in failing
    )  # the control: alone, the baseline cell wants more pairs
    assert undecided_samples(failing, "base", "head", ["baseline_tps", "spec_tps"], 0.05) == []


def test_a_head_that_crashes_where_base_works_fails_with_the_crash_named():
    why = "not run: its warmup failed: killed by SIGSEGV: probably llama.cpp's AMX repack crash"
    samples = [
        s if s.build == "base" or s.role == "baseline"
        else s.model_copy(update={"status": "failed", "valid": False, "tps": None, "acceptance": None,
                                  "invalid_reason": why})
        for s in run()
    ]  # fmt: skip
    result = paired_compare(samples, metrics=("spec_tps",), run="r")
    [d] = [d for d in result.decisions if d.metric == "spec_tps"]
    assert d.status == Status.FAIL and d.reason.endswith(f": {why}")
    assert "head has no valid sample where base has" in d.reason

"""The plan of a run (plan/invocation.py): what a resumed run still runs."""

from __future__ import annotations

from tests.helpers.fakeruns import inv, process


def _plan():
    return process([
        inv("nodraft", role="baseline", warmup=True), inv("spec", warmup=True),
        inv("nodraft", role="baseline", rep=0), inv("spec", rep=0),
        inv("nodraft", role="baseline", rep=1), inv("spec", rep=1),
    ])  # fmt: skip


def test_a_resume_runs_the_samples_not_recorded_with_the_warmups_first():
    plan = _plan()
    assert plan.left(set()) == plan.invocations
    done = {i.sample_key() for i in plan.measured[:3]}
    left = plan.left(done)
    assert [i.warmup for i in left] == [True, True, False]
    assert left[-1].sample_key() == plan.measured[3].sample_key()


def test_with_every_sample_recorded_not_even_the_warmups_run():
    plan = _plan()
    assert plan.left({i.sample_key() for i in plan.measured}) == []


def test_describe_past_its_limit_says_how_many_were_left_out_and_how_to_see_them():
    plan = _plan()
    every = plan.describe()
    short = plan.describe(limit=1)
    assert len(short) < len(every) and short[-1].startswith(f"# ... and {len(plan.invocations) - 1} more")
    assert short[-1].endswith("(--all shows them)")
    assert plan.describe(limit=len(plan.invocations)) == every

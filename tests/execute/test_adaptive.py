"""The stop rule of repetitions: auto, on constructed samples (what the runner would record)."""

from __future__ import annotations

from specbench.execute.adaptive import AdaptivePlan
from specbench.plan.invocation import Invocation
from specbench.results.records import Generation, Sample

GEN = Generation(n_predict=16)
PROMPTS = ("p1", "p2")


def inv(role: str, rep: int, prompt: str, method: str = "none") -> Invocation:
    spec = role == "speculative"
    return Invocation(
        role=role, pair="smol" if spec else None, model="f32", method=method, ngl=0, prompt_id=prompt,
        category="code", repetition=rep, generation=GEN, binary_role="completion", argv=["x"],
        prompt_text="hi", prompt_echoed=False, timeout_s=10,
    )  # fmt: skip


def full_plan(maximum: int) -> list[Invocation]:
    """Per repetition and prompt: the baseline, then two n-gram cells (the sweep's order)."""
    out = []
    for rep in range(maximum):
        for p in PROMPTS:
            out += [inv("baseline", rep, p), inv("speculative", rep, p, "ngram-simple")]
            out.append(inv("speculative", rep, p, "ngram-mod"))
    return out


def sample(i: Invocation, tps: float | None, status: str = "ok") -> Sample:
    return Sample(
        **i.model_dump(include=set(Sample.model_fields)), run_id="r", status=status, valid=status == "ok",
        tps=tps, wall_s=1.0, started_at="now",
    )  # fmt: skip


NOISY = [40.0, 60.0, 45.0, 58.0, 41.0, 59.0]  # ngram-simple: never precise to 3%
STEADY = {"baseline": 50.0, "ngram-mod": 70.0}


def record(invocations: list[Invocation]) -> list[Sample]:
    out = []
    for i in invocations:
        if i.method == "ngram-simple":
            out.append(sample(i, NOISY[i.repetition % len(NOISY)] + (PROMPTS.index(i.prompt_id))))
        else:
            out.append(
                sample(i, STEADY["baseline" if i.role == "baseline" else i.method] + i.repetition * 0.01)
            )
    return out


def test_rounds_extend_only_imprecise_cells_with_their_baselines_until_the_maximum():
    plan = AdaptivePlan(full_plan(5), precision=0.03, maximum=5)
    samples = record([i for i in plan.full if i.repetition < 2])  # round 1: min_repetitions 2
    rounds = []
    while more := plan.next_round(samples):
        rounds.append(more)
        samples += record(more)
    assert len(rounds) == 3 and plan.rounds == 3  # repetitions 3, 4 and 5 of the noisy cell
    for rep, more in enumerate(rounds, start=2):
        # interleaved as planned: per prompt, the baseline right before the cell that needs it
        assert [(i.role, i.method, i.prompt_id) for i in more] == [
            ("baseline", "none", "p1"), ("speculative", "ngram-simple", "p1"),
            ("baseline", "none", "p2"), ("speculative", "ngram-simple", "p2"),
        ]  # fmt: skip
        assert {i.repetition for i in more} == {rep}
    assert max(s.repetition for s in samples if s.method == "ngram-mod") == 1  # precise after round 1


def test_precise_cells_stop_after_the_first_round():
    plan = AdaptivePlan(full_plan(5), precision=0.03, maximum=5)
    samples = [sample(i, 50.0 + i.repetition * 0.1) for i in plan.full if i.repetition < 2]
    assert plan.next_round(samples) == [] and plan.rounds == 0


def test_a_cell_without_any_valid_sample_is_not_repeated():
    plan = AdaptivePlan(full_plan(4), precision=0.03, maximum=4)
    first = [i for i in plan.full if i.repetition < 2]
    samples = [
        sample(i, None, "invalid") if i.method == "ngram-simple" else s
        for i, s in zip(first, record(first), strict=True)
    ]
    assert plan.next_round(samples) == []


def test_resume_finishes_the_planned_repetitions_first():
    plan = AdaptivePlan(full_plan(5), precision=0.03, maximum=5)
    samples = record(
        [i for i in plan.full if i.repetition < 3 and not (i.repetition == 2 and i.prompt_id == "p2")]
    )
    missing = plan.resume_plan(samples)  # the round of repetition 3 was cut short by Ctrl-C
    assert [(i.role, i.method, i.prompt_id, i.repetition) for i in missing] == [
        ("baseline", "none", "p2", 2),
        ("speculative", "ngram-simple", "p2", 2),
        ("speculative", "ngram-mod", "p2", 2),
    ]  # fmt: skip
    assert plan.rounds == 0


def test_another_stop_rule_repeats_only_the_cells_it_leaves_open():
    """ab's rule: the cells the paired gate has not decided get the next round, whatever their precision."""
    asked: list[int] = []

    def undecided(samples):
        asked.append(len(samples))
        return [s for s in samples if s.method == "ngram-mod" and max(x.repetition for x in samples) < 2]

    plan = AdaptivePlan(full_plan(5), precision=0.03, maximum=5, undecided=undecided)
    samples = record([i for i in plan.full if i.repetition < 2])
    more = plan.next_round(samples)
    assert [(i.role, i.method, i.repetition) for i in more if i.prompt_id == "p1"] == [
        ("baseline", "none", 2),
        ("speculative", "ngram-mod", 2),
    ]  # fmt: skip  (the noisy ngram-simple cell is not repeated: the rule says it is decided)
    samples += record(more)
    assert plan.next_round(samples) == [] and asked == [12, 16]


def test_no_round_starts_after_the_deadline_and_the_plan_says_the_budget_stopped_it():
    """``ab --budget``: a round wanted after the deadline is not started, and ``budget_spent`` says
    why the cells stay undecided (not max_repetitions); before the deadline rounds go on as usual."""
    import time

    always = lambda samples: samples  # noqa: E731  (every cell undecided)
    plan = AdaptivePlan(full_plan(5), precision=0.03, maximum=5, undecided=always)
    plan.deadline = time.monotonic() + 3600
    samples = record([i for i in plan.full if i.repetition < 2])
    more = plan.next_round(samples)
    assert more and {i.repetition for i in more} == {2} and not plan.budget_spent
    plan.deadline = time.monotonic() - 1
    assert plan.next_round(samples + record(more)) == [] and plan.budget_spent and plan.rounds == 1
    # at the maximum nothing is wanted, so a passed deadline is not what stopped it
    done = AdaptivePlan(
        full_plan(2), precision=0.03, maximum=2, undecided=always, deadline=time.monotonic() - 1
    )
    assert done.next_round(record(done.full)) == [] and not done.budget_spent


def test_a_round_starts_only_if_the_last_rounds_pace_ends_it_within_the_budget(monkeypatch):
    """The budget is a limit on the run's end, not on its last round's start: at the pace of the
    round before (seconds per invocation) the next one must end by the deadline."""
    import specbench.execute.adaptive as adaptive

    clock = [1000.0]
    monkeypatch.setattr(adaptive.time, "monotonic", lambda: clock[0])
    always = lambda samples: samples  # noqa: E731  (every cell undecided)
    plan = AdaptivePlan(full_plan(5), precision=0.03, maximum=5, undecided=always, deadline=1070.0)
    first = [i for i in plan.full if i.repetition < 2]
    plan.started(len(first))
    clock[0] += 40.0  # the first round took 40 s
    samples = record(first)
    more = plan.next_round(samples)
    per = 40.0 / len(first)
    assert more and not plan.budget_spent  # 40 s gone, 30 left: the next round takes 20 s
    clock[0] += per * len(more)
    samples += record(more)
    left = 1070.0 - clock[0]
    wanted = plan._cut(samples, grow=True)
    assert wanted and left > 0 and per * len(wanted) > left  # the third would start in time, but end past it
    assert plan.next_round(samples) == [] and plan.budget_spent and plan.rounds == 1


def test_a_fixed_count_is_the_first_round_and_never_cut_by_max_repetitions():
    from specbench.plan.config import Config

    base = {"models": {"m": {"path": "m.gguf"}}, "pairs": {"p": {"target": "m", "draft": "m"}}}
    assert Config.model_validate({**base, "repetitions": 3}).most_repetitions == 10  # the default maximum
    assert Config.model_validate({**base, "repetitions": 12}).most_repetitions == 12
    cfg = Config.model_validate({**base, "repetitions": "auto", "max_repetitions": 6})
    assert (cfg.first_repetitions, cfg.most_repetitions) == (3, 6)


def test_a_budget_is_the_round_limit_unless_the_config_sets_max_repetitions():
    """``ab --budget 10m``: a noisy A/A stopped undecided at the default's 10 repetitions with half
    its budget left; with the budget given, it is the limit. An explicit max_repetitions still is."""
    from specbench.gate.abrun import round_notes
    from specbench.plan.config import BUDGET_REPETITIONS, Config

    base = {"models": {"m": {"path": "m.gguf"}}, "pairs": {"p": {"target": "m", "draft": "m"}}}
    default = Config.model_validate({**base, "repetitions": 3})
    assert default.round_limit(budget=False) == 10
    assert default.round_limit(budget=True) == BUDGET_REPETITIONS > 10
    assert round_notes([], default, 600.0)[-1].endswith("until --budget 600 s is spent (at most 100)")
    assert round_notes([], default, None)[-1].endswith("up to 10 (max_repetitions)")
    explicit = Config.model_validate({**base, "repetitions": 3, "max_repetitions": 12})
    assert explicit.round_limit(budget=True) == explicit.round_limit(budget=False) == 12
    assert round_notes([], explicit, 600.0)[-1].endswith("up to 12 (max_repetitions) or --budget 600 s")


def test_why_the_rounds_ended_says_budget_then_a_failed_cell_then_max_repetitions():
    from pathlib import Path

    from specbench.execute.benchmark import RunSummary
    from specbench.gate.abrun import rounds_end

    def summary(**kw):
        return RunSummary(Path("r"), "r", 0, 0, 0, 0, rounds=2, most_repetitions=10, **kw)

    assert rounds_end(summary(budget_spent=True), 600.0, failed=True).startswith("--budget 600 s spent")
    assert rounds_end(summary(), 600.0, failed=True).startswith("not measured further once a cell failed")
    assert rounds_end(summary(), 600.0).startswith("max_repetitions (10) reached")


def test_the_later_rounds_of_a_gate_measure_only_the_roles_its_metrics_read(tmp_path, llama_build):
    """``ab``/``bisect`` leave out what no judged metric reads (``Plan.of_roles``): the rounds after
    the first are cut from the plan of every repetition, which left the draft alone back in (a
    default ``ab`` measured it from round 2 on, and its first round's missing ones with it)."""
    from specbench.execute.benchmark import _adaptive
    from specbench.execute.preparation import Prepared
    from specbench.plan.sweep import make_plan
    from specbench.results.metrics import PAIRED_DEFAULT, roles_read
    from tests.helpers.sweeps import MODELS, make_config, rendered

    config = make_config(tmp_path)
    prompts, models = rendered(config), {name: str(path) for name, path in MODELS.items()}
    plan = make_plan(config, llama_build, models, prompts)
    roles = roles_read(list(PAIRED_DEFAULT))

    def prepared(roles):
        first = plan.of_roles(roles) if roles else plan
        builds = dict.fromkeys(config.build_labels, llama_build)
        return Prepared(config, llama_build, models, {}, prompts, first, builds=builds, roles=roles)

    assert "draft" in {i.role for i in _adaptive(prepared(None), budget=True).full}  # the control: run
    later = _adaptive(prepared(roles), budget=True).full
    assert {i.role for i in later} == {"baseline", "speculative"} and len(later) > len(plan.measured) / 2

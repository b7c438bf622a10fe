"""Tune's rounds run exactly the command lines a sweep of the same settings runs (issue 24: tune's
baselines ran slower than a sweep's; the cause is not in what is run, this keeps it that way)."""

from specbench.execute import preparation
from specbench.plan.depth import with_context
from specbench.plan.sweep import make_plan
from specbench.tune.candidates import Setting
from specbench.tune.rounds import invocations, round_config
from specbench.tune.setup import tune_config
from tests.helpers.sweeps import MODELS, make_config, rendered


def test_tune_rounds_run_the_sweeps_baseline_and_speculative_command_lines(tmp_path, llama_build):
    config = make_config(tmp_path, sweep={"method": ["draft", "ngram-simple"], "draft_max": [7, 8, 12, 16]})
    prompts = rendered(config)
    models = {name: str(path) for name, path in MODELS.items()}
    sweep = make_plan(config, llama_build, models, prompts).measured
    base = tune_config(config, "p")
    prepared = preparation.Prepared(base, llama_build, models, {}, prompts, None)  # type: ignore[arg-type]
    setting = Setting(12, 0, 0.0, 0, 0)
    cfg = round_config(base, [setting], 1, 0)
    rounds = invocations(cfg, prepared, [setting], rep=3).measured
    for inv in rounds:
        twin = [s for s in sweep if s.role == inv.role and s.prompt_id == inv.prompt_id
                and s.draft_max == inv.draft_max and s.method == inv.method]  # fmt: skip
        assert twin, inv.label()
        assert inv.argv == twin[0].argv, inv.label()  # threads, ctx, seed, flags: all the same
        assert (inv.timeout_s, inv.generation) == (twin[0].timeout_s, twin[0].generation)
    # a round is baseline then candidate per prompt, the sweep's order without its other cells
    assert [(i.role, i.prompt_id) for i in rounds] == [
        (role, p.id) for p in prompts for role in ("baseline", "speculative")
    ]
    assert {i.repetition for i in rounds} == {3}


def test_tune_measures_at_one_depth_the_configs_deepest_or_the_one_asked(tmp_path, llama_build):
    """Speculation at depth (issue 62): a draft setting is chosen for one context length, and its
    rounds are measured there (their prompts carry that context; calibration reads their depth)."""
    config = make_config(tmp_path, sweep={"method": ["draft"], "draft_max": [4], "depth": [0, 1024]})
    base = tune_config(config, "p")
    assert base.sweep.depth == [1024]
    deep = [with_context(p, 1024, "<ctx>\n\n") for p in rendered(config)]
    models = {name: str(path) for name, path in MODELS.items()}
    prepared = preparation.Prepared(base, llama_build, models, {}, rendered(config) + deep, None)  # type: ignore[arg-type]
    setting = Setting(4, 0, 0.0, 0, 0)
    rounds = invocations(round_config(base, [setting], 1, 0), prepared, [setting], rep=0).measured
    assert rounds and all(i.depth == 1024 and i.prompt_text.startswith("<ctx>") for i in rounds)

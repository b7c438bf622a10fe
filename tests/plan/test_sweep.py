"""The plan: which invocations, in which order, with which flags, for the real pinned build and for
older flag spellings; and a few planned command lines run for real on SmolLM2."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from specbench.base.errors import ConfigError
from specbench.execute.outputs import continuation
from specbench.parse.process import parse_text
from specbench.plan.config import config_from_mapping
from specbench.plan.invocation import Invocation
from specbench.plan.prompts import render_all
from specbench.plan.sweep import make_plan
from specbench.results.records import Sample
from tests.helpers.realruns import threads
from tests.helpers.sweeps import MODELS, make_config, pairs, rendered, with_flags


def test_counts_order_and_interleaving(tmp_path, llama_build):
    config = make_config(tmp_path)
    plan = make_plan(config, llama_build, MODELS, rendered(config))
    measured = plan.measured
    roles = [i.role for i in measured]
    # per prompt and repetition: 1 baseline, 3 draft cells + 1 ngram cell, 1 draft-alone run
    assert roles.count("baseline") == 2 * 3 and roles.count("draft") == 2 * 3
    assert roles.count("speculative") == 2 * 3 * 4
    assert roles[:6] == ["baseline", "speculative", "speculative", "speculative", "speculative", "draft"]
    assert [i.repetition for i in measured] == sorted(i.repetition for i in measured)
    assert [i.prompt_id for i in measured[:12:6]] == ["code-02", "summ-01"]
    assert [(i.method, i.draft_max) for i in measured[1:5]] == [
        ("draft", 4),
        ("draft", 8),
        ("draft", 16),
        ("ngram-simple", None),
    ]
    # warmups first, one per (binary, model, draft) combination, never counted as measured
    assert plan.invocations[: len(plan.warmups)] == plan.warmups
    assert [(w.binary_role, w.model, w.draft) for w in plan.warmups] == [
        ("completion", "big", None),
        ("speculative_simple", "big", "small"),
        ("speculative_simple", "big", None),
        ("completion", "small", None),
    ]
    assert len({i.sample_key() for i in measured}) == len(measured)
    config.warmup = 2
    assert len(make_plan(config, llama_build, MODELS, rendered(config)).warmups) == 8


def test_sentinel_false_plans_no_reading_and_says_so(tmp_path, llama_build):
    on = make_plan(make_config(tmp_path), llama_build, MODELS, rendered(make_config(tmp_path)))
    config = make_config(tmp_path, sentinel=False)
    plan = make_plan(config, llama_build, MODELS, rendered(config))
    assert on.sentinel is not None and plan.sentinel is None
    assert plan.measured == on.measured  # what is measured is the same; only the readings go
    assert any(n.startswith("speed sentinel off (sentinel: false)") for n in plan.notes)
    assert not any("speed sentinel off" in n for n in on.notes)


def test_flags_for_the_pinned_build(tmp_path, llama_build):
    config = make_config(tmp_path)
    plan = make_plan(config, llama_build, MODELS, rendered(config))
    base, draft4, _, _, ngram, alone = plan.measured[:6]

    assert Path(base.argv[0]).name == "llama-completion" and base.binary_role == "completion"
    assert pairs(base.argv)["-m"] == "/models/big.gguf"
    assert {"-no-cnv", "--no-display-prompt", "--no-escape"} <= set(base.argv)
    assert not base.prompt_echoed
    expected = {"-m": "/models/big.gguf", "-p": "", "-n": "64", "--temp": "0", "-s": "42"}
    expected["-t"] = str(threads())
    assert pairs(base.argv) | {"-p": ""} == {**expected, "-c": "2048", "-ngl": "0"}
    assert base.argv[base.argv.index("-p") + 1] == base.prompt_text

    assert Path(draft4.argv[0]).name == "llama-speculative-simple" and draft4.prompt_echoed
    opts = pairs(draft4.argv)
    assert opts["--spec-draft-model"] == "/models/small.gguf"
    assert opts["--spec-draft-n-max"] == "4" and opts["--spec-draft-n-min"] == "0"
    assert opts["--spec-draft-p-min"] == "0" and opts["--spec-draft-ngl"] == "0"
    assert opts["--spec-type"] == "draft-simple"
    assert (draft4.draft_max, draft4.draft_min, draft4.p_min, draft4.ngld) == (4, 0, 0.0, 0)

    opts = pairs(ngram.argv)
    assert opts["--spec-type"] == "ngram-simple" and "--spec-draft-model" not in opts
    assert "--spec-draft-n-max" not in opts and ngram.draft is None and ngram.draft_max is None

    assert (
        alone.role == "draft" and alone.model == "small" and pairs(alone.argv)["-m"] == "/models/small.gguf"
    )
    assert alone.prompt_text == base.prompt_text


def test_describe_is_shell_quoted_argv(tmp_path, llama_build):
    config = make_config(tmp_path, repetitions=1)
    plan = make_plan(config, llama_build, MODELS, rendered(config))
    lines = plan.describe()
    assert lines[0].startswith(
        f"# {len(plan.invocations)} invocations: 4 warmups, 3 baseline, 12 speculative"
    )
    text = "\n".join(lines)
    for inv in plan.invocations:
        assert f"# {inv.label()}\n{inv.command_line()}" in text
        assert shlex.split(inv.command_line()) == inv.argv
    short = plan.invocations[0].command_line(max_prompt_chars=10)
    assert "\n" not in short and short.count("...") == 1


def test_sample_key_matches_store(tmp_path, llama_build):
    config = make_config(tmp_path, repetitions=1)
    for inv in make_plan(config, llama_build, MODELS, rendered(config)).measured:
        fields = {k: getattr(inv, k) for k in Sample.model_fields if k in Invocation.model_fields}
        sample = Sample(run_id="r", status="ok", valid=True, wall_s=1.0, started_at="now", **fields)
        assert sample.sample_key() == inv.sample_key()


def test_sweep_axes_share_baselines(tmp_path, llama_build):
    config = make_config(
        tmp_path,
        pairs={"a": {"target": "big", "draft": "small"}, "b": {"target": "big", "draft": "mid"}},
        sweep={"method": ["draft", "ngram-simple"], "draft_max": [8], "ngl": [0, 99], "ngld": [0, 99]},
        prompts={"ids": ["code-01"]},
        repetitions=1,
        warmup=0,
    )
    plan = make_plan(config, llama_build, MODELS, rendered(config))
    baselines = [i for i in plan.measured if i.role == "baseline"]
    assert [(b.model, b.ngl) for b in baselines] == [("big", 0), ("big", 99)]
    spec = [i for i in plan.measured if i.role == "speculative"]
    # 2 pairs x 2 ngl x 2 ngld draft cells, + ngram once per (target, ngl), owned by the first pair
    assert sum(i.method == "draft" for i in spec) == 8
    assert [(i.pair, i.ngl) for i in spec if i.method == "ngram-simple"] == [("a", 0), ("a", 99)]
    alone = [(i.model, i.ngl) for i in plan.measured if i.role == "draft"]
    assert alone == [("small", 0), ("small", 99), ("mid", 0), ("mid", 99)]
    assert all(pairs(i.argv)["-ngl"] == str(i.ngl) for i in plan.measured)
    assert all(pairs(i.argv)["--spec-draft-ngl"] == str(i.ngld) for i in spec if i.method == "draft")


def test_pair_with_pinned_method_and_llama_speculative(tmp_path, llama_build):
    """llama-speculative (tree drafting) ignores --spec-type and exits without -md (pinned
    examples/speculative/speculative.cpp): only `draft` is planned with it."""
    config = make_config(
        tmp_path,
        pairs={"m": {"target": "big", "method": "ngram-mod"}},
        speculative_binary="speculative",
        repetitions=1,
    )
    with pytest.raises(
        ConfigError,
        match=r"llama-speculative drafts only with a draft model .* not ngram-mod; set speculative_binary: "
        r"auto \(this build has llama-speculative-simple\) or runner: server",
    ):
        make_plan(config, llama_build, MODELS, rendered(config))
    config = make_config(
        tmp_path, speculative_binary="speculative", repetitions=1, sweep={"method": ["draft"]}
    )
    spec = [
        i
        for i in make_plan(config, llama_build, MODELS, rendered(config)).measured
        if i.role == "speculative"
    ]
    assert Path(spec[0].argv[0]).name == "llama-speculative" and spec[0].binary_role == "speculative"


def test_2024_flag_spellings(tmp_path, llama_build):
    build = with_flags(
        llama_build, "speculative_simple", draft_max="--draft-max", draft_min="--draft-min",
        p_min="--draft-p-min", ngld="-ngld", model_draft="-md",
    )  # fmt: skip
    config = make_config(tmp_path, sweep={"method": ["draft"], "draft_max": [8], "p_min": [0.75]})
    inv = make_plan(config, build, MODELS, rendered(config)).measured[1]
    opts = pairs(inv.argv)
    assert opts["-md"] == "/models/small.gguf" and opts["--draft-max"] == "8" and opts["--draft-min"] == "0"
    assert opts["--draft-p-min"] == "0.75" and opts["-ngld"] == "0"
    assert "--spec-type" not in inv.argv and "--no-escape" not in inv.argv


def test_2023_flag_spellings(tmp_path, llama_build):
    build = with_flags(
        llama_build, "speculative_simple", draft_max="--draft", model_draft="-md", ngld="-ngld"
    )
    config = make_config(tmp_path, sweep={"method": ["draft"], "draft_max": [5]})
    plan = make_plan(config, build, MODELS, rendered(config))
    inv = plan.measured[1]
    assert pairs(inv.argv)["--draft"] == "5" and "--spec-type" not in inv.argv
    assert inv.draft_min is None and inv.p_min is None  # not passed, so not claimed
    assert any("no p_min option" in n for n in plan.notes)
    with pytest.raises(ConfigError, match="does not support method ngram-simple .*no --spec-type"):
        make_plan(make_config(tmp_path), build, MODELS, rendered(config))
    config = make_config(tmp_path, sweep={"method": ["draft"], "draft_min": [0, 2]})
    with pytest.raises(ConfigError, match="sweep.draft_min: .* has no draft_min option"):
        make_plan(config, build, MODELS, rendered(config))


def test_method_missing_from_build(tmp_path, llama_build):
    build = llama_build.model_copy(deep=True)
    flags = build.binaries["speculative_simple"].flags
    flags.spec_types = [t for t in flags.spec_types if t != "ngram-map-k4v"]
    config = make_config(tmp_path, sweep={"method": ["draft", "ngram-map-k4v"]})
    with pytest.raises(ConfigError, match="this llama.cpp build does not support method ngram-map-k4v"):
        make_plan(config, build, MODELS, rendered(config))


def test_planning_errors(tmp_path, llama_build):
    config = make_config(tmp_path)
    with pytest.raises(ConfigError, match="model 'small' was not resolved"):
        make_plan(config, llama_build, {"big": MODELS["big"]}, rendered(config))
    with pytest.raises(ConfigError, match="no prompts were rendered for target 'big'"):
        make_plan(config, llama_build, MODELS, [])
    huge = rendered(config)
    huge[0] = huge[0].model_copy(update={"text": "x" * 200_000})
    with pytest.raises(ConfigError, match="200000 bytes"):
        make_plan(config, llama_build, MODELS, huge)


@pytest.mark.slow
def test_planned_commands_run_on_real_models(tmp_path, llama_build, smol_q4, smol_f32):
    """The pinned binaries accept the planned command lines; outputs line up for comparison."""
    models = {"smol_f32": smol_f32, "smol_q4": smol_q4}
    config = config_from_mapping(
        {
            "models": {"smol_f32": {"path": str(smol_f32.path)}, "smol_q4": {"path": str(smol_q4.path)}},
            "pairs": {"smol": {"target": "smol_f32", "draft": "smol_q4"}},
            "prompts": {"ids": ["extr-01"]},
            "sweep": {"method": ["draft", "ngram-simple"], "draft_max": [8]},
            "generation": {"n_predict": 16, "threads": 1},  # 1: two spinning threads stall on a busy box
            "repetitions": 1,
            "warmup": 0,
        },
        tmp_path,
        "test.yaml",
    )
    prompts = render_all(config.prompt_list(), {"smol_f32": smol_f32.path})
    assert prompts[0].rendering == "template"
    plan = make_plan(config, llama_build, models, prompts)
    base, spec, ngram = plan.measured[:3]
    env = {**os.environ, "LC_ALL": "C"}
    outs = {}
    for inv in (base, spec, ngram):
        res = subprocess.run(
            inv.argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=300
        )
        assert res.returncode == 0, res.stderr[-2000:]
        outs[inv.method] = (res.stdout, parse_text(res.stderr))
    baseline_text = continuation(outs["none"][0], base.prompt_text, echoed=base.prompt_echoed)
    assert baseline_text and "<|im_start|>" not in outs["none"][0]  # --no-display-prompt
    for method in ("draft", "ngram-simple"):
        stdout, log = outs[method]
        assert spec.prompt_text in stdout  # speculative binaries echo the prompt, special tokens included
        text = continuation(stdout, spec.prompt_text, echoed=True)
        n = min(len(text), len(baseline_text))
        assert n > 10 and text[:n] == baseline_text[:n]  # temperature 0: the target's own text
        assert log.n_drafted is not None and log.n_predict is not None
    assert outs["draft"][1].n_drafted > 0  # the draft model speculated (ngram may find no match in 16 tokens)


def test_server_plan_groups_by_setting_and_batches_by_parallel(tmp_path, llama_build):
    config = make_config(tmp_path, runner="server", sweep={"draft_max": [4, 8], "parallel": [1, 2]})
    plan = make_plan(config, llama_build, MODELS, rendered(config))
    measured = plan.measured
    assert not plan.warmups  # the server runner warms up each server it starts
    servers = list(dict.fromkeys(tuple(i.argv) for i in measured))
    # per parallel: baseline, 2 draft cells; the draft alone once (at parallel 1)
    assert len(servers) == 2 * 3 + 1
    for argv in servers:  # every request of a setting in a row: its server starts once per window
        for role in ("baseline", "baseline-after", "speculative", "draft"):
            idx = [n for n, i in enumerate(measured) if tuple(i.argv) == argv and i.role == role]
            assert not idx or (idx == list(range(idx[0], idx[0] + len(idx))) and len(idx) == 3 * 2)
    # the baseline again after the speculative servers of its group (the bracket), then the draft alone
    assert [i.role for i in measured[:: 3 * 2]] == [
        "baseline", "speculative", "speculative", "baseline-after", "draft",
        "baseline", "speculative", "speculative", "baseline-after",
    ]  # fmt: skip
    after = [i for i in measured if i.role == "baseline-after"]
    assert [i.argv for i in after] == [i.argv for i in measured if i.role == "baseline"]
    assert (
        plan.sentinel is not None and plan.sentinel.role == "sentinel" and plan.sentinel.runner == "process"
    )
    assert Path(plan.sentinel.argv[0]).name == "llama-completion" and plan.sentinel.generation.n_predict == 64
    for inv in measured:
        opts = pairs(inv.argv)
        assert Path(inv.argv[0]).name == "llama-server" and inv.runner == "server"
        assert opts["-np"] == str(inv.parallel) and opts["-c"] == str(2048 * inv.parallel)
        assert opts["--cache-ram"] == "0" and opts["--port"] == "0" and opts["-t"] == str(threads())
        assert inv.request.prompt == inv.prompt_text and inv.request.cache_prompt is False
        assert (inv.request.n_predict, inv.request.temperature) == (64, 0)
        if inv.role == "speculative":
            assert (
                opts["--spec-draft-model"] == "/models/small.gguf" and opts["--spec-type"] == "draft-simple"
            )
            assert opts["--spec-draft-n-max"] == str(inv.draft_max)
    batches: dict[int, list] = {}
    for inv in measured:
        batches.setdefault(inv.batch, []).append(inv)
    for group in batches.values():
        assert len(group) <= group[0].parallel and len({tuple(i.argv) for i in group}) == 1
    assert max(len(g) for g in batches.values()) == 2
    assert len({i.sample_key() for i in measured}) == len(measured)
    text = "\n".join(plan.describe(max_prompt_chars=20))
    assert text.count("POST /completion ") == len(measured) and '"cache_prompt": false' in text


def test_server_plan_with_auto_repetitions_plans_the_first_round_and_passes_ngram_sizes(
    tmp_path, llama_build
):
    """repetitions: auto with the server runner: the first round is min_repetitions, and a later
    round (the adaptive plan asks for repetitions up to the maximum) is the same server grouping."""
    config = make_config(
        tmp_path, runner="server", repetitions="auto", min_repetitions=2, max_repetitions=4,
        sweep={"method": ["ngram-simple"], "ngram_size_n": [3]},
    )  # fmt: skip
    first = make_plan(config, llama_build, MODELS, rendered(config)).measured
    assert {i.repetition for i in first} == {0, 1}
    full = make_plan(config, llama_build, MODELS, rendered(config), repetitions=4).measured
    assert {i.repetition for i in full} == {0, 1, 2, 3}
    spec = [i for i in full if i.role == "speculative"]
    assert spec and all(pairs(i.argv)["--spec-ngram-simple-size-n"] == "3" for i in spec)
    assert all(i.ngram_size_n == 3 for i in spec)


@pytest.mark.parametrize(
    "warmup, says", [(0, "no warmup"), (1, "1 warmup request per start"), (3, "3 warmup requests per start")]
)
def test_server_dry_run_says_the_configs_warmup(tmp_path, llama_build, warmup, says):
    config = make_config(tmp_path, runner="server", warmup=warmup)
    text = make_plan(config, llama_build, MODELS, rendered(config)).describe()
    lines = [x for x in text if "# server (" in x]
    assert lines and all(line.endswith(f"slot(s), {says}):") for line in lines), lines


@pytest.mark.parametrize(
    "sections, words",
    [
        ({"sweep": {"method": ["ngram-simple"], "draft_max": [4, 8]}}, "sweep.draft_max does not apply"),
        ({"sweep": {"method": ["ngram-simple"], "ngld": [1]}}, "sweep.ngld does not apply"),
        ({"sweep": {"method": ["ngram-simple"], "p_min": [0.5]}}, "sweep.p_min does not apply"),
        ({"sweep": {"method": ["draft"], "ngram_size_n": [3]}}, "sweep.ngram_size_n is for n-gram methods"),
        ({"runner": "server", "speculative_binary": "speculative"}, "speculative_binary picks the process"),
        ({"sweep": {"method": ["ngram-simple"]}}, "pairs.p.draft is not used"),
        (
            {
                "sweep": {"method": ["ngram-simple"]},
                "pairs": {"p": {"target": "big", "draft": "small", "method": "draft"}},
            },
            "sweep.method is not used",
        ),
    ],
)
def test_a_key_no_cell_uses_is_named_in_a_note(tmp_path, llama_build, sections, words):
    config = make_config(tmp_path, **sections)
    notes = make_plan(config, llama_build, MODELS, rendered(config)).notes
    assert any(words in n for n in notes), notes


def test_keys_some_cell_uses_get_no_note(tmp_path, llama_build):
    config = make_config(tmp_path)  # draft_max [4, 8, 16] with draft and ngram-simple: the draft cells use it
    notes = make_plan(config, llama_build, MODELS, rendered(config)).notes
    assert not any("does not apply" in n or "is for n-gram" in n for n in notes), notes


def test_a_misspelt_method_is_named_with_the_build_method_it_resembles(tmp_path, llama_build):
    """A name llama.cpp never had, close to one the build takes: a typo, not 'build a newer llama.cpp'."""
    config = make_config(tmp_path, sweep={"method": ["draft", "ngram-simpel"]})
    with pytest.raises(ConfigError, match="unknown method ngram-simpel: did you mean ngram-simple") as info:
        make_plan(config, llama_build, MODELS, rendered(config))
    assert "newer" not in str(info.value)


def test_of_roles_keeps_what_the_judged_metrics_read_and_says_what_it_left(tmp_path, llama_build):
    from specbench.results.metrics import roles_read

    config = make_config(tmp_path)
    plan = make_plan(config, llama_build, MODELS, rendered(config))
    base = plan.of_roles(roles_read(["baseline_tps"]))
    assert {i.role for i in base.invocations} == {"baseline"}  # the warmups too
    assert len(base.measured) == 2 * 3 and base.sentinel == plan.sentinel
    assert base.notes[-1].startswith(
        "measured only the baseline samples: no judged metric reads the draft, speculative ones"
    )
    # no metric reads the draft alone: a gate leaves it out; a speedup needs the baseline too
    assert {i.role for i in plan.of_roles(roles_read(["spec_tps"])).measured} == {"speculative"}
    speedup = plan.of_roles(roles_read(["speedup"]))
    assert {i.role for i in speedup.invocations} == {"baseline", "speculative"}
    assert speedup.notes[-1].startswith(
        "measured only the baseline, speculative samples: no judged metric reads the draft ones"
    )
    # nothing the metrics read: everything is measured, and the gate says what it lacks
    assert plan.of_roles(frozenset({"baseline-after"})) is plan


def test_a_plan_beyond_max_invocations_is_refused_before_it_is_built(tmp_path, llama_build):
    from specbench.plan.sweep import MAX_INVOCATIONS

    config = make_config(
        tmp_path, repetitions=1000, sweep={"method": ["draft"], "draft_max": list(range(1, 101))}
    )
    with pytest.raises(ConfigError) as exc:
        make_plan(config, llama_build, MODELS, rendered(config))
    message = str(exc.value)
    assert message.startswith(
        "the plan would run at least 303,000 invocations (100 cells and their baselines x 3"
    )
    assert f"at most {MAX_INVOCATIONS:,}: narrow the sweep, the prompts or the repetitions" in message

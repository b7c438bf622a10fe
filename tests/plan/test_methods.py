"""Speculative methods: their spelling in a config, the cells they give and their llama.cpp options
for both runners (the real pinned build's probed --help; planning opens no model)."""

from __future__ import annotations

import pytest

from specbench.base.errors import ConfigError
from specbench.base.methods import parse_method, spec_type_names
from specbench.plan.sweep import make_plan
from specbench.results.cell import draft_alone_of
from tests.helpers.sweeps import MODELS, make_config, pairs, rendered
from tests.helpers.trees import build_2024, build_2025, ik_build, pinned_build


def test_spelling_one_name_per_method():
    assert parse_method("draft-simple") == "draft"
    assert parse_method("ngram-mod+draft-simple") == "draft+ngram-mod"  # one order: the same cell
    assert parse_method("ngram-cache+ngram-simple") == "ngram-simple+ngram-cache"
    assert parse_method("draft-eagle3") == "draft-eagle3"
    assert parse_method("draft-future") == "draft-future"  # the build's --help decides at plan time
    assert spec_type_names("draft+ngram-mod") == ["draft-simple", "ngram-mod"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("none", "none is no speculative method"),
        ("draft+draft-eagle3", "combines draft and draft-eagle3: llama.cpp runs one draft context"),
        ("ngram-mod+ngram-mod", "names ngram-mod twice"),
        ("draft,ngram-mod", "is no method name"),
        ("draft+", "'' is no method name"),
    ],
)
def test_malformed_methods_refused(text, why):
    with pytest.raises(ValueError, match=why):
        parse_method(text)


def spec_of(tmp_path, build, **sections):
    config = make_config(tmp_path, repetitions=1, **sections)
    plan = make_plan(config, build, MODELS, rendered(config))
    return plan, [i for i in plan.measured if i.role == "speculative"]


@pytest.mark.parametrize("runner", ["process", "server"])
def test_every_method_spelled_for_both_runners(tmp_path, llama_build, runner):
    plan, spec = spec_of(
        tmp_path,
        llama_build,
        runner=runner,
        pairs={
            "p": {"target": "big", "draft": "small"},
            "eagle": {"target": "big", "draft": "mid", "method": "draft-eagle3"},
            "sidecar": {"target": "big", "draft": "mid", "method": "draft-mtp"},
        },
        sweep={"method": ["draft", "draft-mtp", "ngram-mod+draft-simple", "ngram-simple"], "draft_max": [4]},
    )
    by = {(i.pair, i.method): i for i in spec if i.prompt_id == spec[0].prompt_id}
    assert list(by) == [
        ("p", "draft"), ("p", "draft-mtp"), ("p", "draft+ngram-mod"), ("p", "ngram-simple"),
        ("eagle", "draft-eagle3"), ("sidecar", "draft-mtp"),
    ]  # fmt: skip
    draft = by["p", "draft"].argv
    assert (
        pairs(draft)["--spec-draft-model"] == "/models/small.gguf"
        and pairs(draft)["--spec-type"] == "draft-simple"
    )
    # MTP from a sweep: the target's own layers, no draft model and no draft GPU layers
    mtp = by["p", "draft-mtp"]
    assert mtp.draft is None and mtp.ngld is None and "--spec-draft-model" not in mtp.argv
    assert pairs(mtp.argv)["--spec-type"] == "draft-mtp" and pairs(mtp.argv)["--spec-draft-n-max"] == "4"
    assert "--spec-draft-ngl" not in mtp.argv
    combo = pairs(by["p", "draft+ngram-mod"].argv)
    assert (
        combo["--spec-type"] == "draft-simple,ngram-mod"
        and combo["--spec-draft-model"] == "/models/small.gguf"
    )
    ngram = by["p", "ngram-simple"].argv
    assert pairs(ngram)["--spec-type"] == "ngram-simple" and "--spec-draft-n-max" not in ngram
    eagle = pairs(by["eagle", "draft-eagle3"].argv)
    assert eagle["--spec-type"] == "draft-eagle3" and eagle["--spec-draft-model"] == "/models/mid.gguf"
    assert eagle["--spec-draft-n-max"] == "4" and eagle["--spec-draft-ngl"] == "0"
    sidecar = by["sidecar", "draft-mtp"]  # a pair pinned to MTP with a draft: the MTP sidecar GGUF
    assert sidecar.draft == "mid" and pairs(sidecar.argv)["--spec-draft-model"] == "/models/mid.gguf"
    # only draft-simple's draft runs alone (an EAGLE-3 head or MTP sidecar cannot)
    assert {i.model for i in plan.measured if i.role == "draft"} == {"small"}
    assert (
        draft_alone_of(by["eagle", "draft-eagle3"]) is None
        and draft_alone_of(by["sidecar", "draft-mtp"]) is None
    )
    binary = "llama-server" if runner == "server" else "llama-speculative-simple"
    assert all(i.argv[0].endswith(binary) for i in spec)


def test_a_method_the_build_lacks_is_refused_naming_what_it_takes(tmp_path, llama_build):
    with pytest.raises(ConfigError) as info:
        spec_of(tmp_path, llama_build, sweep={"method": ["draft", "lookahead"]})
    message = str(info.value)
    assert "does not support method lookahead" in message and "draft-eagle3" in message
    assert "\n" not in message and "takes: none" not in message


@pytest.mark.parametrize("runner", ["process", "server"])
def test_the_classic_draft_method_runs_on_a_fork_without_draft_simple(tmp_path, runner):
    """ik_llama.cpp: `-md` with the draft length options and no --spec-type, on the speculative
    program the tree has (llama-speculative: it has no llama-speculative-simple)."""
    _, spec = spec_of(
        tmp_path, ik_build(tmp_path), runner=runner, sweep={"method": ["draft"], "draft_max": [8]}
    )
    argv = spec[0].argv
    assert argv[0].endswith("llama-server" if runner == "server" else "llama-speculative")
    assert pairs(argv)["-md"] == "/models/small.gguf" and pairs(argv)["--draft-max"] == "8"
    assert "--spec-type" not in argv and "--draft-p-min" in argv
    if runner == "process":
        assert {i.binary_role for i in spec} == {"speculative"}


def test_a_2024_tree_runs_the_classic_draft_and_refuses_its_server_before_anything_runs(tmp_path):
    old = build_2024(tmp_path)
    plan, spec = spec_of(tmp_path, old, sweep={"method": ["draft"], "draft_max": [8]})
    argv = spec[0].argv
    assert (
        argv[0].endswith("llama-speculative") and pairs(argv)["--draft"] == "8" and "--spec-type" not in argv
    )
    assert any("no p_min option" in n for n in plan.notes)
    with pytest.raises(ConfigError) as info:  # it lists -md in the shared table, and ignores it
        spec_of(tmp_path, old, runner="server", sweep={"method": ["draft"]})
    assert "llama-server of this build does not speculate" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("runner", ["process", "server"])
def test_a_2025_tree_runs_the_classic_draft_on_its_speculative_simple_and_server(tmp_path, runner):
    _, spec = spec_of(
        tmp_path, build_2025(tmp_path), runner=runner, sweep={"method": ["draft"], "draft_max": [8]}
    )
    argv = spec[0].argv
    assert argv[0].endswith("llama-server" if runner == "server" else "llama-speculative-simple")
    assert pairs(argv)["-md"] == "/models/small.gguf" and pairs(argv)["--draft-max"] == "8"
    assert "--spec-type" not in argv and pairs(argv)["--draft-p-min"] == "0"
    if runner == "process":
        assert pairs(argv)["-lv"] == "5"  # the step log (and, in the pin, the statistics line)
        # its lines carry their time only when asked (the pin's always do): the steps' times
        assert {"--log-prefix", "--log-timestamps"} <= set(argv)
    with pytest.raises(ConfigError, match="does not support method ngram-simple .*no --spec-type at all"):
        spec_of(tmp_path, build_2025(tmp_path), runner=runner, sweep={"method": ["ngram-simple"]})


def test_an_ngram_method_on_a_fork_runs_where_its_program_takes_it(tmp_path):
    ik = ik_build(tmp_path)
    _, spec = spec_of(tmp_path, ik, runner="server", sweep={"method": ["ngram-simple"], "ngram_size_n": [3]})
    assert pairs(spec[0].argv)["--spec-type"] == "ngram-simple"
    assert pairs(spec[0].argv)["--spec-ngram-size-n"] == "3"
    with pytest.raises(ConfigError) as info:  # llama-speculative ignores --spec-type
        spec_of(tmp_path, ik, sweep={"method": ["draft", "ngram-simple"]})
    assert "llama-speculative drafts only with a draft model" in str(info.value)
    assert str(info.value).endswith("set runner: server")  # its server takes --spec-type
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError) as info:  # a method the fork lacks: named, with what it takes
        spec_of(tmp_path, ik, runner="server", sweep={"method": ["draft-eagle3"]},
                pairs={"p": {"target": "big", "draft": "mid", "method": "draft-eagle3"}})  # fmt: skip
    assert "ngram-cache, ngram-simple" in str(info.value) and "takes: )" not in str(info.value)


@pytest.mark.parametrize("runner", ["process", "server"])
def test_draft_backend_sampling_is_recorded_in_every_speculative_sample_and_settable(tmp_path, runner):
    """The pin turns --spec-draft-backend-sampling on by default: each speculative invocation
    records the value it ran with (the build's default from its --help, or the config's key)."""
    pinned = pinned_build(tmp_path)
    _, spec = spec_of(
        tmp_path, pinned, runner=runner, sweep={"method": ["draft", "ngram-simple"], "draft_max": [4]}
    )
    by = {i.method: i for i in spec}
    assert (
        by["draft"].draft_backend_sampling is True
        and "--no-spec-draft-backend-sampling" not in by["draft"].argv
    )
    assert by["ngram-simple"].draft_backend_sampling is None  # no draft context
    _, off = spec_of(
        tmp_path, pinned, runner=runner, backend_sampling_draft=False, sweep={"method": ["draft"]}
    )
    assert off[0].draft_backend_sampling is False and "--no-spec-draft-backend-sampling" in off[0].argv
    _, forked = spec_of(tmp_path, ik_build(tmp_path / "ik"), runner=runner, sweep={"method": ["draft"]})
    assert forked[0].draft_backend_sampling is None  # ik_llama.cpp has no such option
    with pytest.raises(ConfigError, match="has no option for backend_sampling_draft"):
        spec_of(tmp_path, ik_build(tmp_path / "ik"), runner=runner, backend_sampling_draft=False,
                sweep={"method": ["draft"]})  # fmt: skip


def test_pair_needs_what_its_method_needs(tmp_path):
    with pytest.raises(ConfigError, match="method draft-eagle3 drafts with a model given as `draft:`"):
        make_config(tmp_path, pairs={"p": {"target": "big", "method": "draft-eagle3"}})
    with pytest.raises(ConfigError, match="method ngram-mod uses no draft model; remove `draft`"):
        make_config(tmp_path, pairs={"p": {"target": "big", "draft": "small", "method": "ngram-mod"}})
    cfg = make_config(tmp_path, pairs={"p": {"target": "big", "method": "draft-mtp"}})
    assert cfg.pairs["p"].method == "draft-mtp" and cfg.pairs["p"].draft is None


def test_mtp_cells_owned_once_per_target(tmp_path, llama_build):
    """Two pairs on one target: MTP on the target runs once (like the n-gram methods)."""
    _, spec = spec_of(
        tmp_path,
        llama_build,
        pairs={"a": {"target": "big", "draft": "small"}, "b": {"target": "big", "draft": "mid"}},
        sweep={"method": ["draft-mtp"], "draft_max": [2, 4]},
    )
    assert sorted({(i.pair, i.draft_max) for i in spec}) == [("a", 2), ("a", 4)]


def test_a_method_no_program_of_the_build_can_run_says_so_instead_of_naming_others(tmp_path):
    """The 2024 tree: llama-speculative drafts with a model only and its server does not speculate;
    the refusal must not send the user to programs the tree lacks (it named speculative-simple and
    the server runner, which this tree has neither of)."""
    with pytest.raises(ConfigError) as info:
        spec_of(tmp_path, build_2024(tmp_path), sweep={"method": ["ngram-simple"]})
    message = str(info.value)
    assert "this build has no program that drafts without a model" in message
    assert "speculative-simple" not in message and "runner: server" not in message

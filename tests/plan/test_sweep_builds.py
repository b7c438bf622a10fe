"""The build axis in the plan: every build runs every cell; within each repetition and prompt the
builds' runs of a baseline, a cell or a draft alone come back to back, in the config's order in
even repetitions and reversed in odd ones (ABBA); each build's binaries run its own invocations.
Process and server runners."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.sweep import make_plan
from specbench.results.cell import baseline_of, cell_of
from tests.helpers.sweeps import MODELS, make_config, rendered, with_flags

TWO = [{"label": "a", "backend": "cpu"}, {"label": "b", "backend": "cpu"}]


def other_build(build, tmp_path: Path):
    """The same flags, binaries at another path: what a second commit's build looks like to the plan."""
    copy = build.model_copy(deep=True)
    (tmp_path / "b-bin").mkdir(exist_ok=True)
    for b in copy.binaries.values():
        b.path = str(tmp_path / "b-bin" / Path(b.path).name)
        Path(b.path).touch()
    return copy


def test_one_unlabelled_build_plans_as_before(tmp_path, llama_build):
    config = make_config(tmp_path)
    plan = make_plan(config, llama_build, MODELS, rendered(config))
    assert {i.build for i in plan.invocations} == {None}
    assert plan.measured == make_plan(config, {None: llama_build}, MODELS, rendered(config)).measured


def test_builds_alternate_back_to_back_in_abba_order(tmp_path, llama_build):
    config = make_config(tmp_path, llama_cpp=TWO, repetitions=3)
    builds = {"a": llama_build, "b": other_build(llama_build, tmp_path)}
    plan = make_plan(config, builds, MODELS, rendered(config))
    single = make_plan(make_config(tmp_path, repetitions=3), llama_build, MODELS, rendered(config)).measured
    measured = plan.measured
    assert len(measured) == 2 * len(single)
    # the single-build order, each invocation twice in a row: once per build, ABBA by repetition
    for k, inv in enumerate(single):
        first, second = measured[2 * k], measured[2 * k + 1]
        assert (first.build, second.build) == (("a", "b") if inv.repetition % 2 == 0 else ("b", "a"))
        for m in (first, second):
            assert cell_of(m)[2:] == cell_of(inv)[2:] and (m.prompt_id, m.repetition) == (
                inv.prompt_id,
                inv.repetition,
            )
            assert m.argv[0] == builds[m.build].binary(m.binary_role).path  # each build's own binaries
    # every speculative run's baseline is its own build's, same prompt and repetition, and ran before it
    seen = set()
    for m in measured:
        if m.role == "baseline":
            seen.add((baseline_of(m), m.prompt_id, m.repetition))
        elif m.role == "speculative":
            assert (baseline_of(m), m.prompt_id, m.repetition) in seen and baseline_of(m)[1] == m.build
    # each build's binaries are warmed up
    assert {w.build for w in plan.warmups} == {"a", "b"}


def test_two_labels_of_one_build_are_an_a_a_plan(tmp_path, llama_build):
    config = make_config(tmp_path, llama_cpp=TWO)
    plan = make_plan(config, llama_build, MODELS, rendered(config))
    a = [m for m in plan.measured if m.build == "a"]
    b = [m for m in plan.measured if m.build == "b"]
    assert [m.argv for m in a] == [m.argv for m in b] and len(a) == len(b) > 0


def test_server_runner_one_server_per_build_and_setting_each_repetition(tmp_path, llama_build):
    config = make_config(tmp_path, llama_cpp=TWO, runner="server", repetitions=2)
    builds = {"a": llama_build, "b": other_build(llama_build, tmp_path)}
    plan = make_plan(config, builds, MODELS, rendered(config))
    runs: list[tuple] = []  # consecutive requests to one server: (build, repetition, after?, argv)
    for m in plan.measured:
        key = (m.build, m.repetition, m.role == "baseline-after", tuple(m.argv))
        if not runs or runs[-1] != key:
            runs.append(key)
        assert m.argv[0] == builds[m.build].binary("server").path
    assert len(runs) == len(set(runs))  # a server serves one build, setting and repetition in a row
    settings = {r[3][1:] for r in runs}
    again = {r[3][1:] for r in runs if r[2]}  # the bracket: each baseline's server once more, after
    assert again and again < settings
    assert len(runs) == 2 * 2 * (len(settings) + len(again))  # every setting, build, repetition
    for rep, order in ((0, ["a", "b"]), (1, ["b", "a"])):
        mine = [r for r in runs if r[1] == rep]
        assert [r[0] for r in mine] == order * (len(mine) // 2)  # the builds alternate setting by setting
        assert all(mine[i][3][1:] == mine[i + 1][3][1:] for i in range(0, len(mine), 2))
    # repetition 0 ends with build b; repetition 1 starts with it (ABBA), never the same server twice
    assert runs[len(runs) // 2 - 1][0] == runs[len(runs) // 2][0] == "b"


def test_builds_whose_binaries_give_different_cells_are_refused(tmp_path, llama_build):
    config = make_config(tmp_path, llama_cpp=TWO, sweep={"method": ["draft"]})
    old = with_flags(llama_build, "speculative_simple", draft_max="--draft-max", model_draft="-md")
    with pytest.raises(ConfigError, match="builds 'a' and 'b' run different cells"):
        make_plan(config, {"a": llama_build, "b": old}, MODELS, rendered(config))
    config = make_config(tmp_path, llama_cpp=TWO)  # an n-gram method the old build lacks: says which build
    with pytest.raises(ConfigError, match="^build 'b': this llama.cpp build does not support method ngram"):
        make_plan(config, {"a": llama_build, "b": old}, MODELS, rendered(config))

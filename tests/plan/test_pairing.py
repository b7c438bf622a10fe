"""``pairing``: which of sequential and duet a plan of several builds runs with, and what duet changes
in it (each side's threads); the refusals name why. Planning only: the executor is tested in
tests/execute/test_duet.py."""

from __future__ import annotations

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.pairing import cpu_halves, side_threads
from specbench.plan.sweep import make_plan
from tests.helpers.sweeps import MODELS, make_config, pairs, rendered

TWO = [{"label": "a", "backend": "cpu"}, {"label": "b", "backend": "cpu"}]
needs_two_cpus = pytest.mark.skipif(cpu_halves() is None, reason="duet needs 2 CPUs and affinity")


def _plan(tmp_path, llama_build, **sections):
    config = make_config(tmp_path, llama_cpp=TWO, **sections)
    builds = {"a": llama_build, "b": llama_build}
    return make_plan(config, builds, MODELS, rendered(config))


def _threads(plan) -> set[str]:
    return {pairs(i.argv)["-t"] for i in plan.invocations}


@needs_two_cpus
def test_auto_is_duet_on_cpu_builds_with_half_the_threads(tmp_path, llama_build):
    halves = cpu_halves()
    plan = _plan(tmp_path, llama_build, generation={"n_predict": 64, "threads": 2 * len(halves[0])})
    assert plan.pairing == "duet" and plan.cpu_sets == [list(h) for h in halves]
    assert _threads(plan) == {str(len(halves[0]))}
    assert {i.generation.threads for i in plan.invocations} == {len(halves[0])}  # what the CPU share reads
    assert any(n.startswith("pairing: duet:") and "half-machine" in n for n in plan.notes)
    assert pairs(plan.sentinel.argv)["-t"] == str(2 * len(halves[0]))  # the sentinel has the whole machine


def test_sequential_keeps_the_configs_threads(tmp_path, llama_build):
    plan = _plan(tmp_path, llama_build, pairing="sequential", generation={"n_predict": 64, "threads": 2})
    assert plan.pairing == "sequential" and plan.cpu_sets == [] and _threads(plan) == {"2"}
    assert not any(n.startswith("pairing") for n in plan.notes)


def test_one_build_is_sequential_and_an_explicit_duet_says_why(tmp_path, llama_build):
    config = make_config(tmp_path, pairing="duet")
    plan = make_plan(config, llama_build, MODELS, rendered(config))
    assert plan.pairing == "sequential"
    assert any("pairing: duet needs two builds" in n for n in plan.notes)
    config = make_config(tmp_path)
    assert not any(
        n.startswith("pairing") for n in make_plan(config, llama_build, MODELS, rendered(config)).notes
    )


def test_duet_is_refused_where_it_cannot_run(tmp_path, llama_build):
    cuda = llama_build.model_copy(update={"backend": "cuda"})
    config = make_config(tmp_path, llama_cpp=TWO, pairing="duet")
    with pytest.raises(
        ConfigError, match=r"pairing: duet: builds on the cuda backend .*set pairing: sequential"
    ):
        make_plan(config, {"a": cuda, "b": cuda}, MODELS, rendered(config))
    auto = make_config(tmp_path, llama_cpp=TWO)
    assert make_plan(auto, {"a": cuda, "b": cuda}, MODELS, rendered(auto)).pairing == "sequential"
    three = [*TWO, {"label": "c", "backend": "cpu"}]
    config = make_config(tmp_path, llama_cpp=three, pairing="duet")
    with pytest.raises(ConfigError, match="pairs two builds at a time; this run has 3"):
        make_plan(config, dict.fromkeys("abc", llama_build), MODELS, rendered(config))
    with pytest.raises(ConfigError, match="pairing: duet runs a pair's two processes at once"):
        make_config(tmp_path, llama_cpp=TWO, pairing="duet", runner="server")
    with pytest.raises(ConfigError, match="pairing"):
        make_config(tmp_path, pairing="both")


def test_a_sides_threads_are_half_at_most_a_half():
    assert [side_threads(t, 1) for t in (None, 1, 2, 3, 8)] == [1, 1, 1, 1, 1]
    assert [side_threads(t, 4) for t in (None, 1, 2, 3, 8, 16)] == [4, 1, 1, 1, 4, 4]

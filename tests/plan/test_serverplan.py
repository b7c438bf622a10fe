"""The server runner's llama-server command line: only the options the probed build takes (issue 59:
a 2025 llama-server has no --cache-ram and refused to start on every sample)."""

from __future__ import annotations

from specbench.plan.serverplan import RAM_CACHE_ABSENT, RAM_CACHE_OFF, ram_cache, server_argv
from specbench.plan.sweep import make_plan
from specbench.results.records import Generation
from tests.helpers.sweeps import MODELS, make_config, rendered
from tests.helpers.trees import build_2025, pinned_build


def server_plan_of(tmp_path, build):
    config = make_config(
        tmp_path, repetitions=1, runner="server", sweep={"method": ["draft"], "draft_max": [4]}
    )
    return make_plan(config, build, MODELS, rendered(config))


def test_a_server_without_cache_ram_is_not_passed_it_and_the_samples_say_so(tmp_path):
    plan = server_plan_of(tmp_path, build_2025(tmp_path))
    assert plan.measured and {i.role for i in plan.measured} >= {"baseline", "speculative"}
    for inv in plan.measured:
        assert "--cache-ram" not in inv.argv and "-cram" not in inv.argv, inv.argv
        assert inv.server_ram_cache == RAM_CACHE_ABSENT
        assert "--slots" in inv.argv  # its /slots is off by default: the executor reads it
    spec = next(i for i in plan.measured if i.role == "speculative")
    assert "-md" in spec.argv and "--draft-max" in spec.argv  # still the classic draft method
    assert any("no --cache-ram" in n and "server_ram_cache: absent" in n for n in plan.notes), plan.notes


def test_the_pinned_server_still_gets_cache_ram_0(tmp_path):
    plan = server_plan_of(tmp_path, pinned_build(tmp_path))
    for inv in plan.measured:
        at = inv.argv.index("--cache-ram")
        assert inv.argv[at + 1] == "0" and inv.server_ram_cache == RAM_CACHE_OFF
    assert not any("no --cache-ram" in n for n in plan.notes)


def test_a_build_probed_before_option_names_were_recorded_keeps_the_pinned_spelling(tmp_path):
    """build.json files (and replay fixtures) from before the probe recorded option names: their
    server ran with --cache-ram 0, and still does."""
    server = pinned_build(tmp_path).binaries["server"]
    old = server.model_copy(
        update={"flags": server.flags.model_copy(update={"cache_ram": None, "known": None})}
    )
    assert ram_cache(old) == (["--cache-ram", "0"], RAM_CACHE_OFF)
    argv = server_argv(old, "/m.gguf", Generation(), None, 1)
    assert argv[argv.index("--cache-ram") + 1] == "0"

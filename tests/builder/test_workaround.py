"""Every binary specbench starts runs in the mode the self-test chose (issue 43 item 1): one place
(``specbench.builder.workaround``) spells the workaround per binary, and every launch site asks it:
the process plan (warmups, baselines, speculative cells, drafts alone), the speed sentinel, the
server plan, calibration's llama-bench and the self-test's own retry. The flags are the real
build's, read from its binaries' --help (llama-bench: ``--repack 0``; the rest: ``--no-repack``);
the workaround is set on a copy, since a CPU without AMX gives the real build none."""

from __future__ import annotations

import pytest

from specbench.builder.buildinfo import BuildInfo, SelfTest, Workaround
from specbench.builder.workaround import REPACK_OFF, crash_facts, repack_off, spelled, workaround_argv
from specbench.plan.sweep import make_plan
from specbench.tune.calibrate import bench_argv
from tests.helpers.sweeps import MODELS, make_config, rendered

pytestmark = pytest.mark.slow  # the real build's flags (its build.json; nothing is run)


def _with_workaround(build: BuildInfo, off: bool = False) -> BuildInfo:
    """The build as its self-test leaves it on a CPU where quantized types crash as built."""
    copy = build.model_copy(deep=True)
    copy.selftest = SelfTest(
        fingerprint="x", machine="fake", checked_at="2026-11-26T00:00:00+00:00",
        workaround=Workaround(name=REPACK_OFF, flag="--no-repack", reason="the self-test crashed"),
    )  # fmt: skip
    copy.workarounds_off = off
    return copy


def _launched(build: BuildInfo, tmp_path, **sections) -> list[list[str]]:
    """Every command line a run of ``build`` would start: the plan's, the sentinel's, calibration's."""
    config = make_config(tmp_path, **sections)
    plan = make_plan(config, build, MODELS, rendered(config))
    lines = [list(i.argv) for i in plan.invocations]
    if plan.sentinel is not None:
        lines.append(list(plan.sentinel.argv))
    return [*lines, bench_argv(build, "/models/big.gguf", [1, 2, 5], 64, 2, 0, 1)]


@pytest.mark.parametrize("runner", ["process", "server"])
def test_every_launch_site_gets_the_workaround_as_its_binary_spells_it(tmp_path, llama_build, runner):
    build = _with_workaround(llama_build)
    lines = _launched(build, tmp_path, runner=runner)
    roles = {r: build.binary(r).path for r in ("completion", "speculative_simple", "server", "bench")}
    started = {next(r for r, p in roles.items() if p == argv[0]) for argv in lines}
    assert started >= {"completion", "bench", "server" if runner == "server" else "speculative_simple"}
    for argv in lines:
        want = ["--repack", "0"] if argv[0] == roles["bench"] else ["--no-repack"]
        assert argv[1 : 1 + len(want)] == want, argv
        assert repack_off(argv)
    # the self-test's retry spells it the same way (llama-completion's own flag)
    assert spelled(REPACK_OFF, build.binaries["completion"]) == ["--no-repack"]
    assert workaround_argv(build, "bench") == ["--repack", "0"]  # llama-bench's --help, probed


def test_turned_off_or_chosen_by_the_config_no_launch_site_adds_it(tmp_path, llama_build):
    off = _with_workaround(llama_build, off=True)  # --no-workarounds: as built
    assert not any(repack_off(argv) for argv in _launched(off, tmp_path))
    assert not crash_facts(off, [], []).workaround_on
    chosen = _launched(_with_workaround(llama_build), tmp_path, repack="on")  # the config's choice wins
    assert all("--no-repack" not in argv for argv in chosen[:-1])  # the plan: --repack, as asked
    assert all("--repack" in argv for argv in chosen[:-1])

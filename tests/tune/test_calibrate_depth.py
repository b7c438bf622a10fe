"""Calibration on a llama-bench without ``-d`` (KV depth): trees before 2025 and ik_llama.cpp. The
stand-in (tests/fakebins/bench-no-depth) prints the 2024 tree's real --help, read by the real probe,
and refuses ``-d`` as that llama-bench does; driven through the real calibration."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.base.errors import RunError
from specbench.builder.buildinfo import BuildInfo
from specbench.builder.probe import probe_binary
from specbench.tune.calibrate import bench_argv, bench_depth, calibrate, depth_note
from tests.helpers.realruns import threads

BENCH = Path(__file__).parents[1] / "fakebins" / "bench-no-depth"
PLAIN = Path(__file__).parents[1] / "fakebins" / "bench-repack-crash"  # its --help lists no option names


def build_with(bench: Path) -> BuildInfo:
    return BuildInfo(key="fake", source="fakebins", backend="cpu", cmake_args=[], bin_dir=str(bench.parent),
                     binaries={"bench": probe_binary("bench", bench)})  # fmt: skip


def test_a_llama_bench_without_d_calibrates_at_depth_0_and_says_so(tmp_path, monkeypatch):
    log = tmp_path / "argv.log"
    monkeypatch.setenv("FAKEBIN_ARGV_LOG", str(log))
    build = build_with(BENCH)
    models = [("t", "/m/t.gguf", None, 0, []), ("d", "/m/d.gguf", None, 0, [])]
    got = calibrate(build, models, max_draft=4, depth=300, threads=threads(), reps=1)
    assert got.calibration.depth == 0 and all(e.depth == 0 for e in got.fresh)
    assert got.calibration.costs("t", 0).pass_s[5] > got.calibration.costs("t", 0).pass_s[1] > 0
    assert all(" -d " not in f" {c} " for c in log.read_text().splitlines())
    note = depth_note(build, 300)
    assert note is not None and "no -d" in note and "depth 300" in note and "\n" not in note
    assert depth_note(build, 0) is None
    with pytest.raises(RunError, match="no -d .* at depth 300"):  # asked straight for a depth it cannot time
        bench_argv(build, "/m/t.gguf", [1, 2], 300, None, 0, 1)


def test_a_llama_bench_with_d_gets_the_depth():
    build = build_with(BENCH)
    build.binaries["bench"].flags.known = [*build.binaries["bench"].flags.known, "-d", "--n-depth"]
    argv = bench_argv(build, "/m/t.gguf", [1, 2], 300, None, 0, 1)
    assert argv[argv.index("-d") + 1] == "300" and bench_depth(build, 300) == 300
    old = build_with(BENCH)
    old.binaries["bench"].flags.known = None  # probed before option names were kept: the pin's has -d
    assert bench_depth(old, 300) == 300

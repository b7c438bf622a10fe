"""The self-test's workaround in a real run (issue 31): every invocation of the build carries the
flag (raw command lines), the manifest records it with its reason, plan notes and report rows say
so; ``workarounds: false`` runs the build as built, and then its warmup crash stops the run before
a measured sample. The build is the real one behind the wrapper of tests/builder/test_selftest.py
(SIGSEGV on a Q4_1 model unless --no-repack): the AMX crash itself needs an AMX CPU."""

from __future__ import annotations

import pytest

from specbench.analysis.report import build_report
from specbench.base.errors import RunError
from specbench.builder import selftest
from specbench.execute import benchmark, preparation
from specbench.plan.config import load_config
from specbench.results.manifestfile import load_manifest
from specbench.results.samplelog import load_samples
from tests.helpers.realruns import crashing_on_q4_1, ngram_config

# integration tier (issue 60); its rules, replayed: tests/execute/test_runner_replay.py (same names)
pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.fixture
def wrapped_build(tmp_path, llama_build, monkeypatch):
    """The real build behind the crashing wrapper, self-tested, served to every run of this test."""
    wrapped = crashing_on_q4_1(llama_build, tmp_path / "bin")
    wrapped.selftest = selftest.run_selftest(wrapped)
    assert wrapped.selftest.workaround is not None
    monkeypatch.setattr(
        "specbench.execute.preparation.ensure_build", lambda *a, **k: wrapped.model_copy(deep=True)
    )
    return wrapped


def _config(tmp_path, smol_q4, *more: str):
    path, _ = ngram_config(tmp_path, smol_q4)
    sets = ["repetitions=1", "warmup=1", "generation.n_predict=16", *more]
    return load_config(path, sets)


def test_every_invocation_carries_the_workaround_and_the_run_says_so(tmp_path, wrapped_build, smol_q4):
    prepared = preparation.prepare(_config(tmp_path, smol_q4))
    assert any(n.startswith("workaround: this build runs with --no-repack") for n in prepared.plan.notes)
    assert all(inv.argv[1] == "--no-repack" for inv in prepared.plan.invocations)
    run_dir = tmp_path / "run"
    benchmark.run_benchmark(prepared, run_dir)
    samples = load_samples(run_dir)
    assert samples and all(s.cmd[1] == "--no-repack" for s in samples)  # the raw command lines
    assert all(s.status != "failed" for s in samples), [s.invalid_reason for s in samples]
    wa = load_manifest(run_dir).build.selftest.workaround
    assert wa.flag == "--no-repack" and "Q4_1" in wa.reason
    report = build_report([run_dir])
    assert report.rows and all("workaround repack-off: --no-repack" in r.warnings for r in report.rows)
    assert any("run with the self-test's workaround" in n for n in report.notes)


def test_no_workarounds_runs_as_built_and_the_crash_stops_the_run(tmp_path, wrapped_build, smol_q4):
    prepared = preparation.prepare(_config(tmp_path, smol_q4, "workarounds=false"))
    assert not any("--no-repack" in inv.argv for inv in prepared.plan.invocations)
    assert any(n.startswith("workaround OFF for this build") for n in prepared.plan.notes)
    run_dir = tmp_path / "run"
    with pytest.raises(RunError, match=r"every cell's warmup failed \(killed by SIGSEGV"):
        benchmark.run_benchmark(prepared, run_dir)
    man = load_manifest(run_dir)
    assert man.build.workarounds_off and man.status == "failed"
    assert all(s.invalid_reason.startswith("not run: its warmup failed") for s in load_samples(run_dir))

"""Shared fixtures. Real llama.cpp builds and real GGUF models, cached under SPECBENCH_HOME."""

pytest_plugins = [
    "tests.fixtures.build",
    "tests.fixtures.models",
    "tests.fixtures.generated",
    "tests.fixtures.llama_history",
    "tests.fixtures.shared",
    "tests.fixtures.realrun",
    "tests.fixtures.replay",
]


import os  # noqa: E402

import pytest  # noqa: E402


def pytest_configure(config):
    """With SPECBENCH_TEST_PIN set (`make test`'s real-run tier), each pytest-xdist worker runs on
    a core of its own, and so does every llama.cpp process it starts: two real runs at once never
    share a core (llama.cpp's threads spin-wait; two on one core fall 30-60x). Real-run tests give
    llama.cpp `tests.helpers.realruns.threads()` threads: the cores the worker may use."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and os.environ.get("SPECBENCH_TEST_PIN") and hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[int(worker[2:]) % len(cpus)]})


@pytest.fixture(autouse=True)
def own_calibration_cache(tmp_path_factory, monkeypatch):
    """Every test starts with an empty calibration cache of its own (CLI children inherit it): an
    entry a tune test cached must not give another test's run a model column, nor survive the session."""
    monkeypatch.setenv("SPECBENCH_CALIBRATION", str(tmp_path_factory.mktemp("calibration")))


# A test that asks for the real build or a real model may run llama.cpp: it is `slow` whether or not
# its module says so. `make test` runs the others on both cores (pytest-xdist) and these after them,
# one worker per core, pinned (pytest_configure above), so that two llama.cpp processes never share
# a core (each would spin its threads against the other: a run's t/s falls 30-60x).
REAL_FIXTURES = {"llama_build", "smol_q4", "gemma_q4"}  # smol_f32, the heads, llama_history: through these


# The real-run tiers' longest modules, longest first (`make test`'s --durations, 2-core VM,
# 2026-11-27): they start first, so the two workers end together. By default pytest-xdist hands
# out modules with the most tests first (`make test` turns that off), which sent the
# one-test modules, among them the longest (tune/test_drafts_real.py: 72 s), last: one worker ran
# them alone while the other had finished. `make test`'s real tier first, then the modules whose
# real tests are all in `make test-integration` (issue 60: their rules are replayed in `make test`).
LONGEST_FIRST = (
    "tests/tune/test_drafts_real.py",
    "tests/cli/test_independence_real.py",
    "tests/cli/test_run.py",
    "tests/execute/test_server.py",
    "tests/cli/test_tune.py",
    "tests/cli/test_methods_real.py",
    "tests/cli/test_run_builds.py",
    "tests/execute/test_server_synth.py",
    "tests/publish/test_site_browser.py",
    "tests/cli/test_tune_faults.py",
    "tests/cli/test_decide_real.py",
    "tests/cli/test_shards.py",
    "tests/cli/test_env_provenance.py",
    "tests/cli/test_run_faults.py",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if REAL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}  # a stable sort: the rest keep their order
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))

"""Shared fixtures. Real llama.cpp builds and real GGUF models, cached under SPECBENCH_HOME."""

pytest_plugins = [
    "tests.fixtures.build",
    "tests.fixtures.models",
    "tests.fixtures.generated",
    "tests.fixtures.llama_history",
]


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def own_calibration_cache(tmp_path_factory, monkeypatch):
    """Every test starts with an empty calibration cache of its own (CLI children inherit it): an
    entry a tune test cached must not give another test's run a model column, nor survive the session."""
    monkeypatch.setenv("SPECBENCH_CALIBRATION", str(tmp_path_factory.mktemp("calibration")))

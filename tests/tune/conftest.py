"""Fixtures of the tune tests (tests/tune/test_drafts.py and its real-run companion)."""

from __future__ import annotations

import pytest

from tests.hub_server import FakeHub


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The local Hub server (tests/hub_server.py) as HF_ENDPOINT, and an empty SPECBENCH_HOME."""
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))
    for var in ("HF_HOME", "HF_HUB_CACHE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    server = FakeHub(tmp_path / "hub").start()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    yield server
    server.stop()

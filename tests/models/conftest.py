"""Fixtures for the models tests: an empty model cache and a fake Hugging Face Hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hub_server import FakeHub


@pytest.fixture
def empty_home(tmp_path, monkeypatch) -> Path:
    """A fresh SPECBENCH_HOME, with no HF settings leaking in from the environment."""
    home = tmp_path / "home"
    monkeypatch.setenv("SPECBENCH_HOME", str(home))
    for var in (
        "HF_HOME",
        "HF_HUB_CACHE",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HF_HUB_OFFLINE",
        "HF_ENDPOINT",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def hub(tmp_path, empty_home, monkeypatch):
    """A fake Hub on 127.0.0.1 (a real HTTP server), with HF_ENDPOINT pointing at it."""
    server = FakeHub(tmp_path / "hub").start()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    yield server
    server.stop()

"""Where specbench keeps its cache: builds, sources and models survive between runs."""

import os
from pathlib import Path

import platformdirs


def home() -> Path:
    """SPECBENCH_HOME, or the user cache dir (``~/.cache/specbench`` on Linux)."""
    env = os.environ.get("SPECBENCH_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("specbench"))


def sources_dir() -> Path:
    return home() / "sources"


def builds_dir() -> Path:
    return home() / "builds"


def models_dir() -> Path:
    return home() / "models"


def results_dir() -> Path:
    """The default results folder: ``results/`` in the current directory (the repository)."""
    return Path(os.environ.get("SPECBENCH_RESULTS", "results"))

"""The import contracts in pyproject.toml (run by `make lint`) hold for the package, and they catch
what they are there for: an import up the pipeline, a circle (a lazy one too) and a new package the
contract does not place. Each case runs lint-imports on a copy of the package with one bad change."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the package and its pyproject.toml (lint-imports reads the package from its cwd)."""
    shutil.copytree(ROOT / "specbench", tmp_path / "specbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_package_keeps_its_contracts(tree):
    done = _lint(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "BROKEN" not in done.stdout and ", 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("path", "text", "complaint"),
    [
        (  # a lower stage reaching up
            "results/upward.py",
            "from specbench.analysis import stats\n",
            "specbench.results is not allowed to import specbench.analysis",
        ),
        (  # a circle hidden in a function body is still a circle
            "analysis/caveats.py",
            "\n\ndef _late():\n    from specbench.analysis import report\n\n    return report\n",
            "No cycles are allowed in specbench.analysis",
        ),
        (  # a package nobody placed in the layers
            "newstage/__init__.py",
            "",
            "specbench.newstage",
        ),
    ],
    ids=["upward", "lazy-circle", "unplaced-package"],
)
def test_a_bad_import_breaks_a_contract(tree, path, text, complaint):
    target = tree / "specbench" / path
    target.parent.mkdir(exist_ok=True)
    with target.open("a") as fh:
        fh.write(text)
    done = _lint(tree)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "BROKEN" in done.stdout and complaint in done.stdout, done.stdout

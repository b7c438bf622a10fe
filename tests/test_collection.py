"""Every test file under tests/ is collected by the suite as `make test` runs it.

pytest skips folders named build/, dist/, venv... by default (``norecursedirs``): 83 tests under
``tests/build/`` once never ran. This compares the files on disk with pytest's own collection, so
another such name (or a missing ``__init__.py`` that makes two modules clash) fails here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def uncollected(root: Path) -> set[str]:
    """Test files under ``root/tests`` that ``pytest --collect-only`` (run in ``root``) leaves out."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"},  # -v there changes the listing
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    collected = {line.split("::", 1)[0] for line in done.stdout.splitlines() if "::" in line}
    on_disk = {p.relative_to(root).as_posix() for p in (root / "tests").rglob("test_*.py")}
    return on_disk - collected


def test_every_test_file_on_disk_is_collected():
    assert uncollected(ROOT) == set()


def test_a_folder_pytest_skips_is_caught(tmp_path):
    """The check fails where it should: a test folder named build/ in a copy of the project's config."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for folder in ("tests", "tests/ok", "tests/build"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "tests/ok/test_seen.py").write_text("def test_seen():\n    pass\n")
    (tmp_path / "tests/build/test_hidden.py").write_text("def test_hidden():\n    pass\n")
    assert uncollected(tmp_path) == {"tests/build/test_hidden.py"}

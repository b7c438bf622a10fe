"""`make lint`: every test file on disk is one pytest collects (as `make test` runs it), and every
module tests/conftest.py's LONGEST_FIRST starts first is one (a renamed module would quietly drop
out of the order that balances the real-run tier's two workers).

pytest skips folders named build/, dist/, venv... by default (``norecursedirs``): 83 tests under
``tests/build/`` once never ran. This compares the files on disk with pytest's own collection, so
another such name (or a missing ``__init__.py`` that makes two modules clash) fails the lint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"},  # -v there changes the listing
    )
    if done.returncode != 0:
        print(done.stdout[-3000:] + done.stderr[-3000:], file=sys.stderr)
        print("error: pytest --collect-only failed (above)", file=sys.stderr)
        return 1
    collected = {line.split("::", 1)[0] for line in done.stdout.splitlines() if "::" in line}
    on_disk = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")}
    missing = sorted(on_disk - collected)
    if missing:
        print(f"error: pytest does not collect {', '.join(missing)} (a folder name in norecursedirs, "
              "or a missing __init__.py?)", file=sys.stderr)  # fmt: skip
        return 1
    sys.path.insert(0, str(ROOT))
    from tests.conftest import LONGEST_FIRST

    gone = [p for p in LONGEST_FIRST if p not in collected]
    if gone:
        print(f"error: tests/conftest.py LONGEST_FIRST names {', '.join(gone)}, which pytest does not collect",
              file=sys.stderr)  # fmt: skip
        return 1
    print(f"{len(on_disk)} test files, all collected")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run a script against a copy of the package with one more entry in the option table."""

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def with_entry(tmp_path: Path, entry: str, script: str) -> subprocess.CompletedProcess:
    """``script`` run with ``entry`` (a ``LlamaOption(...)``) before the parallel axis: what adding
    an option or axis reaches, with nothing else changed."""
    shutil.copytree(REPO / "specbench", tmp_path / "specbench", ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / "specbench" / "base" / "llamaopts.py"
    text, anchor = path.read_text(), '    LlamaOption("parallel",'
    assert text.count(anchor) == 1
    path.write_text(text.replace(anchor, f"    {entry},\n{anchor}", 1))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], cwd=tmp_path, capture_output=True, text=True,
        timeout=120, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip

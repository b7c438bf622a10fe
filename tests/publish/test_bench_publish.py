"""The scale benchmark writes the history schema `specbench history` reads (it broke once when the
schema gained the speed sentinel's columns and nothing ran it)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_scale_benchmark_publishes_its_synthetic_history(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_publish.py"),
            "--runs",
            "12",
            "--cells",
            "6",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "publish: exit 0" in done.stdout
    assert "12 runs" in done.stdout
    assert (tmp_path / "site" / "index.html").stat().st_size > 0

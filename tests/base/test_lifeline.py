"""No child outlives specbench, however it ends: a specbench process killed with SIGKILL (no clean-up
runs) takes its llama.cpp child and that child's helpers with it (specbench.base.lifeline).

The stand-in llama.cpp (tests/fakebins/sleeper) sleeps and starts a helper that sleeps too, and says
both pids; the specbench side is the real runner (``execute``, what ``specbench run`` calls) and the
real server start, each in a Python process of its own that the test kills with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.procs import gone, wait_for

FAKEBINS = Path(__file__).parents[1] / "fakebins"
REPO = Path(__file__).parents[2]

RUNNER = """
import sys
from pathlib import Path
from specbench.builder.toolkit import detect_backend
from specbench.machine.envinfo import collect
from specbench.execute.runner import execute
from tests.helpers.fakeruns import inv, manifest, process
run_dir = Path(sys.argv[1])
execute(process([inv("sleeper", timeout_s=600.0)]), run_dir, manifest(run_dir, collect(detect_backend)))
"""

SERVER = """
import sys
from pathlib import Path
from specbench.execute.server import start_server
out = Path(sys.argv[1])
start_server([sys.argv[2]], out / "stdout.log", out / "stderr.log", timeout_s=600)
"""


def _stdout_of_sleeper(folder: Path) -> Path | None:
    found = [p for p in folder.rglob("*") if p.is_file() and p.read_bytes().startswith(b"child ")]
    return found[0] if found and b"self " in found[0].read_bytes() else None


def _pids(path: Path) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines())}


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the processes in /proc")
@pytest.mark.parametrize("code", [RUNNER, SERVER], ids=["run", "server"])
def test_a_specbench_killed_with_sigkill_leaves_no_child_running(tmp_path, code):
    folder = tmp_path / "out"
    specbench = subprocess.Popen(
        [sys.executable, "-c", code, str(folder), str(FAKEBINS / "sleeper")],
        cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    pids: dict[str, int] = {}
    try:
        started = wait_for(lambda: _stdout_of_sleeper(folder) or specbench.poll() is not None, 120)
        assert started, "the stand-in never started"
        assert specbench.poll() is None, specbench.communicate()[1]
        pids = _pids(_stdout_of_sleeper(folder))
        assert not gone(pids["self"]) and not gone(pids["child"])
        specbench.kill()  # SIGKILL: no handler, no finally, no atexit runs
        specbench.wait()
        # a generous bound, polled: the verdict is whether they go, not how fast
        assert wait_for(lambda: gone(pids["self"]), 30), "the llama.cpp stand-in outlived specbench"
        assert wait_for(lambda: gone(pids["child"]), 30), "the stand-in's helper outlived specbench"
    finally:
        if specbench.poll() is None:
            specbench.kill()
        for pid in pids.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the processes in /proc")
def test_run_past_its_timeout_kills_the_childs_whole_group(tmp_path):
    """``lifeline.run`` (pip downloads): `subprocess.run` kills only the leader on a timeout, and the
    helper it started would run on."""
    from specbench.base import lifeline

    pids_file = tmp_path / "pids"
    script = f'sleep 600 & echo "child $!" > {pids_file}; echo "self $$" >> {pids_file}; wait'
    with pytest.raises(subprocess.TimeoutExpired):
        lifeline.run(["sh", "-c", script], timeout=5)  # a generous time to start; then killed
    pids = _pids(pids_file)
    assert wait_for(lambda: gone(pids["self"]) and gone(pids["child"]), 30), "the group outlived its timeout"

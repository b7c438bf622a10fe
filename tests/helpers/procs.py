"""Processes for the signal and foreign-process tests: start, find, wait for, stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def start_and_signal(
    config: Path, run_dir: Path, sig: signal.Signals, env: dict, *args: str, wait_s: float = 240
) -> tuple[int, str, str]:
    """Start ``specbench run`` (with ``args``), wait for its first sample, send ``sig``; its exit
    code, stdout and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "specbench", "run", str(config), "--out", str(run_dir), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    samples_file = run_dir / "samples.jsonl"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and proc.poll() is None:
        if samples_file.is_file() and samples_file.read_text().count("\n") >= 1:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be signalled"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def start_foreign(name: str, seconds: int = 60) -> int:
    """A process outside our tree (its parent shell exits) whose argv[0] is ``name``."""
    out = subprocess.run(
        ["bash", "-c", f"(exec -a {name} sleep {seconds}) >/dev/null 2>&1 & echo $!"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return int(out.stdout.strip())


def stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (zombies have none)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def gone(pid: int) -> bool:
    """The process has exited (no such pid, or a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True

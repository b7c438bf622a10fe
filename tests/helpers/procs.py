"""Processes for the signal and foreign-process tests: start, find, wait for, stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from specbench.execute.process import KILL_GRACE_S, Command, ProcessResult, run_together


def run_one(
    argv: list[str],
    stdout: Path,
    stderr: Path,
    timeout_s: float,
    grace_s: float = KILL_GRACE_S,
    stamp_stdout: bool = False,
) -> ProcessResult:
    """One command run as the executors run theirs (``run_together``)."""
    return run_together([Command(argv, stdout, stderr, timeout_s, stamp_stdout)], grace_s=grace_s)[0]


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
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


def stop(pid: int, wait_s: float = 10.0) -> None:
    """SIGKILL ``pid`` and wait until it has left the process list (or is a zombie): on a loaded
    machine a killed process lingers a moment, and a test that looks right after saw it."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        stat = PROC / str(pid) / "stat"
        try:
            if PROC.is_dir() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return
            os.kill(pid, 0)
        except (ProcessLookupError, FileNotFoundError):
            return
        except PermissionError:
            return
        time.sleep(0.05)


PROC = Path("/proc")  # Linux; elsewhere (macOS) these helpers ask ps, which both have


def _ps(*columns: str) -> list[list[str]]:
    """Every process as ``ps`` lists them: one row of ``columns`` each (the last may hold spaces)."""
    out = subprocess.run(
        ["ps", "-axww", "-o", ",".join(f"{c}=" for c in columns)], capture_output=True, text=True, check=True
    ).stdout
    return [line.split(None, len(columns) - 1) for line in out.splitlines() if line.strip()]


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (zombies have none)."""
    if not PROC.is_dir():
        return [int(pid) for pid, stat, *cmd in _ps("pid", "stat", "command")
                if not stat.startswith("Z") and cmd and marker in cmd[0]]  # fmt: skip
    pids = []
    for proc in PROC.iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def children_named(parent: int, name: str) -> list[int]:
    """Live processes started by ``parent`` whose executable is named ``name``."""
    if not PROC.is_dir():
        return [int(pid) for pid, ppid, stat, comm in _ps("pid", "ppid", "stat", "comm")
                if int(ppid) == parent and not stat.startswith("Z") and Path(comm).name == name]  # fmt: skip
    found = []
    for stat in PROC.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        if comm == name and int(rest[1]) == parent:
            found.append(int(stat.parent.name))
    return found


def wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie waiting to be reaped."""
    if not PROC.is_dir():
        out = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout
        return bool(out.strip()) and not out.strip().startswith("Z")
    try:
        with open(PROC / str(pid) / "stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def gone(pid: int) -> bool:
    """The process has exited (no such pid, or a zombie waiting to be reaped)."""
    return not alive(pid)

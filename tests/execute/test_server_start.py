"""Starting a llama-server never orphans it: a stand-in server (a sleeping Python), no llama.cpp."""

from __future__ import annotations

import subprocess
import sys

import pytest

from specbench.base import interrupts
from specbench.execute.server import start_server


def test_a_signal_while_the_server_starts_stops_it(tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM) handled while Popen runs: raised inside it, the started server's pid
    would never be returned and it would keep its port and the CPU. It waits until the server is
    known, then the start's clean-up stops it."""
    started: list[subprocess.Popen] = []
    real = subprocess.Popen

    def popen(*args, **kwargs):
        proc = real(*args, **kwargs)
        if args[0] == argv:  # the server, not base/lifeline's watchdog (started with the first child)
            started.append(proc)
            interrupts.deliver(KeyboardInterrupt())  # what the signal handler does (interrupts._interrupt)
        return proc

    argv = [sys.executable, "-c", "import time; time.sleep(300)"]
    monkeypatch.setattr(subprocess, "Popen", popen)
    try:
        with pytest.raises(KeyboardInterrupt):
            start_server(argv, tmp_path / "server.stdout", tmp_path / "server.stderr", timeout_s=60)
        assert len(started) == 1
        assert started[0].poll() is not None, "the server outlived its start"
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

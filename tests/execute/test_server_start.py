"""Starting a llama-server: it is never orphaned (a stand-in server, a sleeping Python) and a start
that fails says why in one line (a stand-in replaying the real server's log); no llama.cpp."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from specbench.base import interrupts
from specbench.execute.server import ServerError, start_server


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


PORT_TAKEN = Path(__file__).resolve().parents[1] / "data" / "load_errors" / "port-taken.server.stderr"


def test_a_taken_port_is_a_one_line_error_in_llama_servers_words(tmp_path):
    """The pinned llama-server's own log of a port another socket holds (recorded: the folder's
    README), replayed by a stand-in that prints it and exits 1 as the real one does: the start
    fails at once with one line that says the server exited and why."""
    server = tmp_path / "llama-server"
    server.write_text(f'#!/bin/sh\ncat "{PORT_TAKEN}" >&2\nexit 1\n')
    server.chmod(0o755)
    with pytest.raises(ServerError) as info:
        start_server([str(server), "--port", "18556"], tmp_path / "s.out", tmp_path / "s.err", timeout_s=60)
    message = str(info.value)
    assert message.startswith("llama-server exited (exit code 1") and "\n" not in message, message
    assert "couldn't bind HTTP server socket" in message and "port: 18556" in message, message


def test_a_server_writes_its_files_in_its_logs_folder_not_the_users(tmp_path, monkeypatch):
    """As a process-runner child (execute/process._start): an older llama-server's own log file
    lands beside its raw logs, never in the folder the user ran specbench from."""
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.chdir(user)
    server = tmp_path / "llama-server"
    server.write_text("#!/bin/sh\necho log > server.log\nexit 1\n")
    server.chmod(0o755)
    raw = tmp_path / "run" / "raw"
    with pytest.raises(ServerError):
        start_server([str(server)], raw / "s.out", raw / "s.err", timeout_s=60)
    assert list(user.iterdir()) == [] and (raw / "server.log").is_file()


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="reads /proc (Linux)")
def test_a_server_that_prints_port_0_is_found_on_the_port_it_listens_on(tmp_path):
    """ik_llama.cpp's llama-server, given --port 0, logs ``"port": "0"``: the run waited for a port
    that never came (issue 59). The port the process listens on is read from /proc instead."""
    import socket
    import subprocess
    import sys

    from specbench.execute.server import _listening_port

    code = (
        "import socket, time\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "print(s.getsockname()[1], flush=True); time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        assert _listening_port(proc.pid) == port
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        proc.kill()
        proc.wait()
    assert _listening_port(proc.pid) is None  # gone: no port, no error

"""One llama-server process: start it in its own process group, wait until it serves, ask it, stop it.

Nothing here may hang a run: the server takes ``--port 0`` (the system picks a free port), readiness
is polled with a deadline, every request has a timeout, a server that exits while loading is
reported with llama.cpp's own error line, and stopping kills the whole process group.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from specbench.base import interrupts, lifeline
from specbench.base.childenv import child_env
from specbench.base.errors import RunError
from specbench.base.formats import json_text
from specbench.execute.outputs import failure_reason
from specbench.execute.process import cannot_start, kill_group
from specbench.parse.crash import exit_status

_LISTENING = re.compile(r"listening on https?://[^\s/]*?:(\d+)")
_POLL_S = 0.1
_LOG_TAIL = 1 << 20
# The server is local: an http_proxy in the environment must not route requests elsewhere.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServerError(RunError):
    """A server could not be started or stopped answering; the message is a failed sample's reason."""


@dataclass
class Reply:
    """One request's outcome: the JSON body, or why there is none."""

    data: dict | None
    wall_s: float
    error: str | None = None
    timed_out: bool = False


@dataclass
class RunningServer:
    """A started llama-server; ``url`` is known once it printed its port."""

    argv: list[str]
    proc: subprocess.Popen
    stdout_path: Path
    stderr_path: Path
    port: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_reason(self) -> str:
        """Why it exited, in llama.cpp's words (``exit code 1: ... model loading error``)."""
        code, sig = exit_status(self.proc.returncode)
        return f"llama-server exited ({failure_reason(_tail(self.stderr_path), code, sig)})"

    def stop(self) -> None:
        """Kill the whole process group (SIGTERM, then SIGKILL) and reap the server."""
        if self.proc.returncode is None:
            kill_group(self.proc, grace_s=2.0)
        lifeline.forget(self.proc)


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - _LOG_TAIL))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _printed_port(server: RunningServer) -> int | None:
    found = (_LISTENING.search(_tail(path)) for path in (server.stderr_path, server.stdout_path))
    return next((int(m.group(1)) for m in found if m), None)


def _listening_port(pid: int) -> int | None:
    """The TCP port process ``pid`` listens on, read from /proc (Linux; None elsewhere): for servers
    that print the port asked for, not the one ``--port 0`` got (ik_llama.cpp logs ``"port": "0"``)."""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return None
    sockets = {link[8:-1] for link in links if link.startswith("socket:[")}
    for table in ("tcp", "tcp6"):
        try:
            rows = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()  # sl local_address rem_address st ... inode (the 10th)
            if len(fields) > 9 and fields[3] == "0A" and fields[9] in sockets:  # 0A: LISTEN
                return int(fields[1].rsplit(":", 1)[1], 16)
    return None


def start_server(argv: list[str], stdout_path: Path, stderr_path: Path, timeout_s: float) -> RunningServer:
    """Start ``argv`` and return once ``/health`` says the model is loaded (503 while it loads);
    ServerError otherwise, with llama.cpp's error line. On any failure the process group is killed."""
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    server = None
    try:
        with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
            # A signal during Popen is raised once the server is ``server``: the clean-up below stops it.
            with interrupts.starting_child():
                try:  # its own group, killed with specbench however it ends; in its logs' folder
                    proc = lifeline.popen(
                        argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=child_env(),
                        cwd=stdout_path.parent,
                    )  # fmt: skip
                except (OSError, ValueError) as exc:
                    raise cannot_start(argv[0], exc) from exc
                server = RunningServer(list(argv), proc, stdout_path, stderr_path)
        _wait_ready(server, timeout_s)
    except BaseException:
        if server is not None:
            server.stop()
        raise
    return server


def _wait_ready(server: RunningServer, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not server.alive():
            raise ServerError(f"{server.exit_reason()} before it was ready")
        if server.port is None:
            server.port = _printed_port(server) or _listening_port(server.proc.pid)
        if server.port is not None and _health(server) == 200:
            return
        time.sleep(_POLL_S)
    raise ServerError(f"llama-server was not ready after {timeout_s:g} s (timeout_s); it was stopped")


def _health(server: RunningServer) -> int | None:
    try:
        with _OPENER.open(server.url + "/health", timeout=2.0) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code  # 503 while loading
    except (OSError, ValueError):
        return None


def get_text(server: RunningServer, path: str, timeout_s: float = 10.0) -> str | None:
    """A GET endpoint's text (``/metrics``), None when it gives none (an HTTP error, no answer)."""
    try:
        with _OPENER.open(server.url + path, timeout=timeout_s) as resp:
            return resp.read().decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return None


def speculative_slots(server: RunningServer) -> bool | None:
    """True when every slot speculates, False when one does not, None when ``/slots`` does not say."""
    try:
        slots = json.loads(get_text(server, "/slots") or "null")
    except ValueError:
        return None
    if not isinstance(slots, list) or not slots:
        return None
    flags = [s.get("speculative") for s in slots if isinstance(s, dict)]
    return None if None in flags else all(flags)


def post(server: RunningServer, path: str, body: dict, timeout_s: float) -> Reply:
    """POST JSON; an HTTP error, a dead server or no answer in ``timeout_s`` is a Reply with ``error``."""
    data = json_text(body, None, redacted=False).encode("utf-8")  # sent as it is
    req = urllib.request.Request(
        server.url + path, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    start = time.monotonic()
    try:
        with _OPENER.open(req, timeout=timeout_s) as resp:
            payload = json.loads(resp.read())
        wall = time.monotonic() - start
        if not isinstance(payload, dict):
            return Reply(None, wall, "llama-server answered something other than a JSON object")
        return Reply(payload, wall)
    except (OSError, ValueError) as exc:
        wall = time.monotonic() - start
        if isinstance(exc, urllib.error.HTTPError):
            return Reply(None, wall, f"llama-server answered HTTP {exc.code}: {_message(exc)}")
        if not isinstance(exc, TimeoutError):
            with suppress(subprocess.TimeoutExpired):  # a dying server closes its sockets before it exits
                server.proc.wait(timeout=1.0)
            if not server.alive():
                return Reply(None, wall, server.exit_reason())
        reason = getattr(exc, "reason", exc)  # a URLError says why; a timeout is its own reason
        if isinstance(reason, TimeoutError):
            return Reply(None, wall, f"no answer in {timeout_s:g} s (timeout_s)", timed_out=True)
        return Reply(None, wall, f"request to llama-server failed: {reason}")


def _message(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read())
        err = body.get("error") if isinstance(body, dict) else None
        msg = err.get("message") if isinstance(err, dict) else err
        return str(msg or body)[:300]
    except (OSError, ValueError):
        return str(exc.reason)[:300]

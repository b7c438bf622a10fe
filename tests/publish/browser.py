"""Headless Debian Chromium driven over the DevTools protocol, with the standard library only.

Why not Playwright: its browser download needs the network and its driver is a Node bundle; the
protocol over one WebSocket is all these tests need (navigate, wait for load, read console errors
and failed loads, evaluate a line of JS, take a screenshot).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


class _WebSocket:
    """A client WebSocket (RFC 6455): text frames out (masked), frames in (any length)."""

    def __init__(self, url: str) -> None:
        host_port, path = url.removeprefix("ws://").split("/", 1)
        host, port = host_port.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(f"websocket refused: {head[:200]!r}")

    def send(self, text: str) -> None:
        data = text.encode()
        n = len(data)
        header = bytes([0x81]) + (
            bytes([0x80 | n])
            if n < 126
            else bytes([0x80 | 126]) + struct.pack(">H", n)
            if n < 65536
            else bytes([0x80 | 127]) + struct.pack(">Q", n)
        )
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("devtools closed the connection")
            buf += chunk
        return buf

    def recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            message += self._exact(n)
            if b0 & 0x80:
                return message.decode("utf-8", "replace")


@dataclass
class PageResult:
    url: str
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads
    value: object = None  # what the expression evaluated to


class Browser:
    """One headless Chromium with one tab; ``open`` loads a page and collects its errors."""

    def __init__(self) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="specbench-chromium-"))
        self.proc = subprocess.Popen(
            [
                str(CHROMIUM),
                *FLAGS,
                f"--user-data-dir={self.profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.is_file() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        pages = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30).read())
        page = next(p for p in pages if p.get("type") == "page")
        self.ws = _WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        for method in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            self.call(method)

    def call(self, method: str, events: list | None = None, **params: object) -> dict:
        self.next_id += 1
        me = self.next_id
        self.ws.send(json.dumps({"id": me, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == me:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if events is not None and "method" in msg:
                events.append(msg)

    def open(self, url: str, expression: str = "document.title") -> PageResult:
        events: list[dict] = []
        self.call("Page.navigate", events, url=url)
        deadline = time.monotonic() + 60
        while not any(e["method"] == "Page.loadEventFired" for e in events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load in 60 s")
            events.append(json.loads(self.ws.recv()))
        time.sleep(0.05)
        value = self.call("Runtime.evaluate", events, expression=expression, returnByValue=True)
        result = PageResult(url=url, value=value.get("result", {}).get("value"))
        for e in events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                result.errors.append(
                    "console: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"])
                )
            elif e["method"] == "Runtime.exceptionThrown":
                result.errors.append("exception: " + str(p["exceptionDetails"].get("text")))
            elif e["method"] == "Log.entryAdded" and p["entry"].get("level") == "error":
                result.errors.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif e["method"] == "Network.loadingFailed":
                result.errors.append(f"failed load: {p.get('errorText')}")
        return result

    def screenshot(self, path: Path, width: int = 1280, height: int = 900) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        shot = self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        try:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

"""``specbench publish --serve``: the site on http://127.0.0.1:PORT/ for a look (as ``asv preview``)."""

from __future__ import annotations

import functools
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from specbench.base.errors import InputError


class ServeError(InputError):
    """The site cannot be served as asked (a port in use, no site)."""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (the base class's name)
        pass  # one line per request would bury the address line


def server(site: Path, port: int) -> ThreadingHTTPServer:
    """A server on localhost only (never on every interface: the site may name private paths)."""
    handler = functools.partial(_Quiet, directory=str(site))
    try:
        return ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as exc:
        raise ServeError(
            f"--port {port}: cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}); "
            "give another --port (0 picks a free one)"
        ) from exc

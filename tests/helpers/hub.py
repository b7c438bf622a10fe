"""What a test reads off the local Hub server's request log (tests/hub_server.py)."""

from __future__ import annotations


def requested_ranges(hub) -> dict[str, int]:
    """Bytes asked for per file, from the server's request log; asserts every file GET was a range."""
    out: dict[str, int] = {}
    for r in hub.requests:
        if r.method == "GET" and "/resolve/" in r.path:
            assert r.range, f"a whole-file GET of {r.path}"
            first, _, last = r.range.removeprefix("bytes=").partition("-")
            out[r.path] = out.get(r.path, 0) + int(last) - int(first) + 1
    return out

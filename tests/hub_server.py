"""A small Hugging Face Hub for tests: a real HTTP server on 127.0.0.1 serving repos from disk.

It speaks the part of the Hub protocol that huggingface_hub 2.x uses to fetch files:

- ``GET /api/models/{repo}`` and ``/api/models/{repo}/revision/{rev}``: ``sha`` and ``siblings``
  (with ``size``, ``blobId`` and ``lfs: {sha256, size, pointerSize}`` when ``?blobs=True``),
- ``HEAD``/``GET /{repo}/resolve/{rev}/{path}``: ``X-Repo-Commit``, ``ETag``/``X-Linked-Etag``
  (the sha256, as for LFS files), ``X-Linked-Size``, ``Content-Length``; ``Range: bytes=N-`` or
  ``bytes=N-M`` gives 206 with ``Content-Range`` (416 past the end),
- errors as the Hub sends them: 401/403 with ``X-Error-Code: GatedRepo``, 404 with
  ``RepoNotFound``, ``RevisionNotFound`` or ``EntryNotFound``.

Faults for tests: ``drop_once``/``drop_always`` (close the connection mid-file on the first/every GET),
``stall`` (send part of a file, then nothing: a transfer a signal has to end),
``lie_sha256`` (advertise a wrong sha256 for a path) and ``claim_size`` (advertise another size in
the API). Every request is logged in ``requests``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class Request:
    method: str
    path: str
    range: str | None
    authorization: str | None


@dataclass
class Repo:
    gated_token: str | None = None  # the token that opens a gated repo
    refs: dict[str, str] = field(default_factory=dict)  # branch/tag -> commit
    commits: dict[str, Path] = field(default_factory=dict)  # commit -> folder of files


class FakeHub:
    """Repos live under ``root/<owner>/<name>/<commit>/``; ``url`` goes into HF_ENDPOINT."""

    def __init__(self, root: Path):
        self.root = root
        self.repos: dict[str, Repo] = {}
        self.requests: list[Request] = []
        self.drop_once: dict[str, int] = {}  # repo path -> bytes to send before dropping
        self.drop_always: dict[str, int] = {}  # same, on every GET
        self.lie_sha256: set[str] = set()
        self.claim_size: dict[str, int] = {}  # repo path -> size to advertise instead of the real one
        self.stall: dict[str, int] = {}  # repo path -> bytes to send, then hold the GET open (a dead link)
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def add_commit(
        self, repo_id: str, files: dict[str, Path | bytes], ref: str = "main", gated_token: str | None = None
    ) -> str:
        """Publish ``files`` (repo path -> file or content) as a new commit on ``ref``; returns its sha."""
        repo = self.repos.setdefault(repo_id, Repo())
        if gated_token is not None:
            repo.gated_token = gated_token
        digest = hashlib.sha1(f"{repo_id}:{len(repo.commits)}:{sorted(files)}".encode())
        commit = digest.hexdigest()
        folder = self.root / repo_id / commit
        for name, content in files.items():
            dest = folder / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                dest.write_bytes(content)
            else:
                shutil.copyfile(content, dest)
        repo.commits[commit] = folder
        repo.refs[ref] = commit
        return commit

    # -- protocol ------------------------------------------------------------------------------

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                hub._serve(self, head=False)

            def do_HEAD(self) -> None:
                hub._serve(self, head=True)

        return Handler

    def _error(self, h, status: int, code: str | None, message: str, commit: str | None = None) -> None:
        body = json.dumps({"error": message}).encode()
        h.send_response(status)
        if code:
            h.send_header("X-Error-Code", code)
        h.send_header("X-Error-Message", message)
        if commit:
            h.send_header("X-Repo-Commit", commit)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    def _serve(self, h, head: bool) -> None:
        url = urlsplit(h.path)
        path = unquote(url.path)
        self.requests.append(Request(h.command, path, h.headers.get("Range"), h.headers.get("Authorization")))
        if path.startswith("/api/models/"):
            return self._api(h, path.removeprefix("/api/models/"), parse_qs(url.query))
        parts = path.strip("/").split("/")
        if len(parts) >= 5 and parts[2] == "resolve":
            return self._resolve(h, f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:]), head)
        return self._error(h, 404, None, "Not Found")

    def _repo_or_error(self, h, repo_id: str, rev: str) -> tuple[Repo, str] | None:
        repo = self.repos.get(repo_id)
        if repo is None:
            self._error(h, 404, "RepoNotFound", "Repository not found")
            return None
        if repo.gated_token is not None:
            auth = h.headers.get("Authorization")
            if auth != f"Bearer {repo.gated_token}":
                status = 401 if auth is None else 403
                self._error(h, status, "GatedRepo", f"Access to model {repo_id} is restricted.")
                return None
        commit = rev if rev in repo.commits else repo.refs.get(rev)
        if commit is None:
            self._error(h, 404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return None
        return repo, commit

    def _api(self, h, rest: str, query: dict[str, list[str]]) -> None:
        if "/revision/" in rest:
            repo_id, rev = rest.split("/revision/", 1)
        else:
            repo_id, rev = rest.rstrip("/"), "main"
        found = self._repo_or_error(h, repo_id, rev)
        if found is None:
            return
        repo, commit = found
        folder = repo.commits[commit]
        blobs = query.get("blobs", ["false"])[0].lower() == "true"
        siblings = []
        for p in sorted(q for q in folder.rglob("*") if q.is_file()):
            name = p.relative_to(folder).as_posix()
            entry: dict = {"rfilename": name}
            if blobs:
                size = self.claim_size.get(f"{repo_id}/{name}", p.stat().st_size)
                entry.update(size=size, blobId=hashlib.sha1(p.read_bytes()).hexdigest())
                entry["lfs"] = {"sha256": self._sha256(repo_id, name, p), "size": size, "pointerSize": 134}
            siblings.append(entry)
        body = json.dumps(
            {"id": repo_id, "modelId": repo_id, "sha": commit, "private": False,
             "gated": "manual" if repo.gated_token else False, "siblings": siblings}
        ).encode()  # fmt: skip
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _sha256(self, repo_id: str, name: str, p: Path) -> str:
        st = p.stat()
        real = _file_sha256(str(p), st.st_size, st.st_mtime_ns)
        if f"{repo_id}/{name}" in self.lie_sha256:
            return hashlib.sha256(b"not " + real.encode()).hexdigest()
        return real

    def _resolve(self, h, repo_id: str, rev: str, name: str, head: bool) -> None:
        found = self._repo_or_error(h, repo_id, rev)
        if found is None:
            return
        repo, commit = found
        p = repo.commits[commit] / name
        if not p.is_file():
            return self._error(h, 404, "EntryNotFound", f"{name} does not exist", commit=commit)
        size = p.stat().st_size
        etag = f'"{self._sha256(repo_id, name, p)}"'
        start, end = 0, size  # end: one past the last byte sent
        rng = h.headers.get("Range")
        if rng and rng.startswith("bytes=") and not head:
            first, _, last = rng.removeprefix("bytes=").partition("-")
            start = int(first)
            end = min(size, int(last) + 1) if last else size
            if start >= size:
                return self._error(h, 416, None, "Range Not Satisfiable")
        partial = start > 0 or end < size
        h.send_response(206 if partial else 200)
        h.send_header("X-Repo-Commit", commit)
        h.send_header("ETag", etag)
        h.send_header("X-Linked-Etag", etag)
        h.send_header("X-Linked-Size", str(size))
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Length", str(end - start))
        if partial:
            h.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        h.end_headers()
        if head:
            return
        key = f"{repo_id}/{name}"
        with p.open("rb") as fh:  # only the bytes asked for: a range read of a header is 512 KB of 500 MB
            fh.seek(start)
            data = fh.read(end - start)
        if key in self.stall:
            h.wfile.write(data[: self.stall[key]])
            h.wfile.flush()
            self._stopping.wait(120)
            h.close_connection = True
            return
        cut = self.drop_once.pop(key, self.drop_always.get(key))
        if cut is not None:
            h.wfile.write(data[:cut])
            h.wfile.flush()
            h.close_connection = True
            return
        h.wfile.write(data)


@functools.lru_cache(maxsize=64)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """A served file's sha256, once per version of it (every request sends it as the ETag)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()

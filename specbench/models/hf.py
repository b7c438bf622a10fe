"""Fetching GGUF files from the Hugging Face Hub through huggingface_hub.

Its environment is read at call time (huggingface_hub reads it at import): ``HF_ENDPOINT``, ``HF_TOKEN``
(never printed), ``HF_HUB_OFFLINE`` (cache only), ``HF_HUB_CACHE``/``HF_HOME``. Sizes and the LFS
sha256 from ``model_info`` are checked after download, and a file that does not match leaves the cache.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

from pydantic import BaseModel
from tqdm.auto import tqdm as _tqdm

from specbench.base.errors import ModelError
from specbench.base.files import write_atomic
from specbench.base.paths import UnsafePath, check_part, check_relative, inside
from specbench.models import cache
from specbench.models.gguffile import set_names, split_name
from specbench.models.spec import HfSource, ProgressFn
from specbench.parse.crash import first_line

_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


class RemoteFile(BaseModel):
    name: str  # path in the repo
    size: int | None = None
    sha256: str | None = None  # LFS sha256, when the Hub gives it


class HfFetched(BaseModel):
    files: list[Path]  # first shard first
    revision: str  # resolved commit


def _endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _token() -> str | None:
    return os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or None


def scrub(text: str) -> str:
    """Remove the HF token from any text that might reach a message or log."""
    token = _token()
    return text.replace(token, "***") if token else text


def _gguf_names(names: list[str]) -> str:
    ggufs = sorted(n for n in names if n.endswith(".gguf"))
    if not ggufs:
        return "it has no .gguf files"
    shown = ", ".join(ggufs[:12]) + (f", ... ({len(ggufs)} in all)" if len(ggufs) > 12 else "")
    return f"it has: {shown}"


def select_files(src: HfSource, remote: list[RemoteFile]) -> list[RemoteFile]:
    """The files one model needs: the named file or the pattern's one match, plus all its shards."""
    by_name = {f.name: f for f in remote}
    names = list(by_name)
    where = f"{src.repo}@{src.revision}"
    if src.file is not None:
        if src.file not in by_name:
            raise ModelError(f"{src.file} is not in Hugging Face repo {where}; {_gguf_names(names)}")
        chosen = src.file
    else:
        matches = [n for n in names if fnmatch.fnmatch(n, src.pattern or "")]
        if not matches:
            raise ModelError(
                f"no file in Hugging Face repo {where} matches {src.pattern!r}; {_gguf_names(names)}"
            )
        groups = sorted({_group_key(n) for n in matches})
        if len(groups) > 1:
            raise ModelError(
                f"pattern {src.pattern!r} matches {len(groups)} models in {where} "
                f"({', '.join(g for g in groups[:6])}); make it select one"
            )
        chosen = min(matches)
    shards = set_names(chosen)  # a split set's names keep the folder: "Q4/model-00001-of-00002.gguf"
    missing = [n for n in shards if n not in by_name]  # a single file is there: it was chosen
    if missing:
        raise ModelError(
            f"split GGUF set {shards[0]} in {where} is missing {len(missing)} of {len(shards)} shards "
            f"({', '.join(missing[:3])}); the repo is incomplete, pick another file"
        )
    return [by_name[n] for n in shards]


def _group_key(name: str) -> str:
    info = split_name(name)
    return name if info is None else f"{info[0]}-*-of-{info[2]:05d}.gguf"


def _progress_class(progress: ProgressFn | None, label: str):
    """A tqdm class that forwards huggingface_hub's byte counts to our progress callback."""

    class _Bar(_tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            kwargs.pop("name", None)
            super().__init__(*args, **kwargs)
            self._done = int(kwargs.get("initial") or 0)

        def update(self, n=1):
            self._done += int(n or 0)
            if progress is not None:
                progress(label, self._done, self.total)

    return _Bar


def _hub_error(src: HfSource, exc: Exception) -> ModelError:
    """Map huggingface_hub's errors to one line a user can act on (never with the token)."""
    from huggingface_hub import errors as hub

    status = getattr(getattr(exc, "response", None), "status_code", None)
    page = f"{_endpoint()}/{src.repo}"
    licence = f"accept the licence on the model page ({page}) and set HF_TOKEN to a token with access"
    no_revision = isinstance(exc, hub.RevisionNotFoundError)
    if isinstance(exc, hub.GatedRepoError) or status in (401, 403) and not no_revision:
        return ModelError(f"Hugging Face repo {src.repo} is gated or private (HTTP {status}): {licence}")
    if no_revision:
        return ModelError(
            f"revision {src.revision!r} not found in Hugging Face repo {src.repo}; check `revision`"
        )
    if isinstance(exc, hub.RepositoryNotFoundError):
        return ModelError(
            f"Hugging Face repo {src.repo} not found (HTTP {status}); "
            "check the name, or if it is private set HF_TOKEN"
        )
    if isinstance(exc, hub.RemoteEntryNotFoundError):
        return ModelError(
            f"{src.file or src.pattern} not found in Hugging Face repo {src.repo}@{src.revision}"
        )
    if isinstance(exc, hub.HfHubHTTPError):
        return ModelError(
            f"the Hugging Face Hub at {_endpoint()} answered HTTP {status} for {src.repo}; try again later"
        )
    said = first_line(str(exc))
    return ModelError(
        f"fetching {src.repo} failed: {scrub(type(exc).__name__ + (': ' + said if said else ''))}"
    )


def _is_network_error(exc: Exception) -> bool:
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    if isinstance(exc, (httpx2.TransportError, OfflineModeIsEnabled)):  # connect, timeout, broken transfer
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return isinstance(exc, HfHubHTTPError) and status is not None and status >= 500


def fetch_hf(src: HfSource, progress: ProgressFn | None = None) -> HfFetched:
    """Fetch (or find in the cache) every file of an hf model; verify size and sha256."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        return _from_cache(src, reason="HF_HUB_OFFLINE is set")
    try:
        commit, remote = repo_files(src)
    except Exception as exc:
        if _is_network_error(exc):
            reason = f"cannot reach the Hugging Face Hub at {_endpoint()} ({_reason(exc)})"
            return _from_cache(src, reason=reason)
        raise _hub_error(src, exc) from None
    wanted = select_files(src, remote)
    if not _safe(check_part, commit):
        raise ModelError(
            f"the Hugging Face Hub at {_endpoint()} answered commit {commit!r} for {src.repo}, which is "
            "no commit; check HF_ENDPOINT"
        )
    if missing := sum(f.size or 0 for f in wanted if _cached(src, f.name, commit) is None):
        cache.check_free_space(missing, cache.hf_cache_dir(), f"{src.repo} ({len(wanted)} file(s))")
    paths = [_download(src, f, commit, progress) for f in wanted]
    if commit != src.revision:
        # Remember branch/tag -> commit as huggingface_hub does, so offline runs find this snapshot.
        write_atomic(inside(_storage(src), "refs", src.revision), commit)
    return HfFetched(files=paths, revision=commit)


def repo_files(src: HfSource) -> tuple[str, list[RemoteFile]]:
    """The commit ``src.revision`` names and the repo's files in it, by one API call (huggingface_hub's
    errors are the caller's); a name that would leave the cache is never listed, so never chosen."""
    from huggingface_hub import HfApi

    info = HfApi(endpoint=_endpoint(), token=_token()).model_info(
        src.repo, revision=src.revision, files_metadata=True
    )
    files = [
        RemoteFile(
            name=s.rfilename, size=s.lfs.size if s.lfs else s.size, sha256=s.lfs.sha256 if s.lfs else None
        )
        for s in info.siblings or []
        if _safe(check_relative, s.rfilename)
    ]
    return info.sha or src.revision, files


def _storage(src: HfSource) -> Path:
    return inside(cache.hf_cache_dir(), "models--" + src.repo.replace("/", "--"))


def _safe(check, value: object) -> bool:
    """Whether ``value`` passes a specbench.base.paths check (a name from a server is no config key)."""
    try:
        check(value)
    except (UnsafePath, TypeError, AttributeError):
        return False
    return True


def _reason(exc: Exception) -> str:
    text = first_line(str(exc)) or type(exc).__name__
    return scrub(text)[:120]


def _cached(src: HfSource, name: str, commit: str) -> Path | None:
    """The file as the HF cache holds it (the file system only; None: absent, or a dangling link)."""
    from huggingface_hub import try_to_load_from_cache

    hit = try_to_load_from_cache(src.repo, name, cache_dir=str(cache.hf_cache_dir()), revision=commit)
    return Path(hit) if isinstance(hit, str) else None


def _download(src: HfSource, f: RemoteFile, commit: str, progress: ProgressFn | None) -> Path:
    from huggingface_hub import hf_hub_download

    if f.sha256 and _SHA256_RE.match(f.sha256.lower()) and _cached(src, f.name, commit) is None:
        path = _download_resumable(src, f, f.sha256.lower(), commit, progress)
        _verify(src, path, f.size, f.sha256)
        return path
    try:
        local = hf_hub_download(
            src.repo,
            f.name,
            revision=commit,
            cache_dir=str(cache.hf_cache_dir()),
            endpoint=_endpoint(),
            token=_token(),
            tqdm_class=_progress_class(progress, f"{src.repo}/{f.name}"),
        )
    except Exception as exc:
        if _is_network_error(exc) or isinstance(exc, OSError) and "Consistency check" in str(exc):
            raise ModelError(
                f"download of {src.repo}/{f.name} broke off ({_reason(exc)}); nothing was cached, "
                "check the network and run the command again"
            ) from None
        raise _hub_error(src, exc) from None
    path = Path(local)
    _verify(src, path, f.size, f.sha256)
    return path


def _download_resumable(
    src: HfSource, f: RemoteFile, sha256: str, commit: str, progress: ProgressFn | None
) -> Path:
    """An LFS file through specbench.models.hfresume: a broken transfer keeps its bytes for the next run."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import build_hf_headers

    from specbench.models import hfresume

    label = f"{src.repo}/{f.name}"
    part = inside(_storage(src), "partial", f"{sha256}.part")
    url = hf_hub_url(src.repo, f.name, revision=commit, endpoint=_endpoint())
    report = None if progress is None else (lambda done, total: progress(label, done, total))
    try:
        hfresume.download(url, build_hf_headers(token=_token()), part, f.size, report)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: the CLI prints ``kept`` after it
        size = part.stat().st_size if part.is_file() else 0
        exc.kept = f"{size} bytes of {label} kept in {part}; run the command again to resume"  # type: ignore[attr-defined]
        raise
    except hfresume.TransferBroken as exc:
        raise ModelError(
            f"download of {label} broke off ({scrub(str(exc))[:120]}); the {exc.kept} bytes fetched are "
            "kept, check the network and run the command again to resume"
        ) from None
    except Exception as exc:
        raise _hub_error(src, exc) from None
    return hfresume.place_in_cache(part, _storage(src), sha256, commit, f.name)


def _verify(src: HfSource, path: Path, size: int | None, sha256: str | None) -> None:
    """Check a cached Hub file; a mismatch deletes it (blob and snapshot link) and is refused."""
    actual_size = path.stat().st_size
    if size is not None and actual_size != size:
        _evict(path)
        raise ModelError(
            f"{src.repo}/{path.name} has {actual_size} bytes, the Hub says {size}; "
            "the file was removed from the cache, run the command again"
        )
    if sha256 is None:
        return
    actual = cache.sha256_file(path)
    if actual != sha256.lower():
        _evict(path)
        raise ModelError(
            f"sha256 mismatch for {src.repo}/{path.name}: expected {sha256}, got {actual}; "
            "the download was refused and removed from the cache"
        )


def _evict(path: Path) -> None:
    blob = path.resolve()
    path.unlink(missing_ok=True)
    if blob != path:
        blob.unlink(missing_ok=True)


def cached_hf(src: HfSource) -> HfFetched | None:
    """The model's files when the HF cache already holds them, found without any request (a dry
    run: HF_HUB_OFFLINE semantics whatever the environment says); None when it does not."""
    try:
        return _from_cache(src, reason="not fetching")
    except ModelError:
        return None


def _from_cache(src: HfSource, reason: str) -> HfFetched:
    """Use what the HF cache holds for this model when the Hub cannot be asked (``_cached``: the file
    system only; ``hf_hub_download(local_files_only=True)`` asks the Hub for its agent registry)."""
    storage = _storage(src)
    commit = src.revision if _COMMIT_RE.match(src.revision) else None
    ref = inside(storage, "refs", src.revision)
    if commit is None and ref.is_file():
        commit = ref.read_text().strip()
    snapshot = inside(storage, "snapshots", commit) if commit and _safe(check_part, commit) else None
    if commit is None or snapshot is None or not snapshot.is_dir():
        raise ModelError(
            f"{reason}, and {src.repo}@{src.revision} is not in the cache ({cache.hf_cache_dir()}); "
            "check the network (or HF_ENDPOINT) and try again"
        )
    names = [p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file()]
    try:
        wanted = select_files(src, [RemoteFile(name=n) for n in names])
    except ModelError as exc:
        raise ModelError(f"{reason}, and the cache lacks it: {exc}") from None
    paths = []
    for f in wanted:
        local = _cached(src, f.name, commit)
        if local is None:  # a dangling link (blob removed)
            raise ModelError(f"{reason}, and the cached {src.repo}/{f.name} is incomplete; fetch it again")
        blob = local.resolve().name
        _verify(src, local, None, blob if _SHA256_RE.match(blob) else None)
        paths.append(local)
    return HfFetched(files=paths, revision=commit)

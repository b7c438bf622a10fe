"""The models ``specbench drafts`` judges: the target and every candidate, read from their headers.

A candidate is a local GGUF (or a folder of them), a Hub ``repo/file`` or whole repo (judged from
its header alone, read with range requests: ``models.hfheader``), a config's model, or a curated
family's repos. Each becomes a ``DraftRow`` that says what it is and, checked against the target as
llama.cpp will (``models.paircheck``), whether it can draft for it and why not. Pricing and ranking
are ``tune.drafts``'.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from specbench.base.errors import ModelError, SpecbenchError
from specbench.builder.buildinfo import BuildInfo
from specbench.models import cache
from specbench.models.families import load_families
from specbench.models.gguffile import shard_paths
from specbench.models.ggufheader import GGUFHeader, read_local_header
from specbench.models.hf import cached_hf
from specbench.models.hfheader import RemoteGGUF, list_ggufs, read_remote_header
from specbench.models.meta import GGUFMeta, header_meta, read_metadata
from specbench.models.paircheck import check_metadata, check_tokens
from specbench.models.resolve import resolve_models
from specbench.models.spec import ModelSpec
from specbench.plan.config import Config
from specbench.results.calibration import PassCosts


class DraftRow(BaseModel):
    """One candidate: what its header says, whether it can draft for the target, what it costs."""

    candidate: str  # a path, repo/file, or an n-gram method
    kind: str  # local | hub | config | ngram
    family: str | None = None  # the curated family it was listed under
    listed_params: float | None = None  # the size the family list gives
    source: str | None = None  # the local path, or repo/file@commit
    compatible: bool
    reason: str | None = None  # why it cannot draft for the target (or why it was not read)
    architecture: str | None = None
    parameter_count: int | None = None
    file_type: str | None = None
    size_bytes: int | None = None
    tensor_types: dict[str, float] = Field(default_factory=dict)  # type -> share of the weight bytes
    header_bytes_read: int | None = None  # bytes fetched from the Hub to judge it
    bytes_per_token: int | None = None
    decode_ms: float | None = None  # estimated from the cost curve
    decode_ms_low: float | None = None
    decode_ms_high: float | None = None
    decode_ms_measured: float | None = None  # llama-bench's, when this machine has timed it
    priced_by: str | None = None  # measured (llama-bench's costs) | estimated (the curve's) | None
    draft_max: int | None = None  # the draft length that needs the least acceptance
    alpha_break_even: float | None = None  # per-token acceptance for 1.0x at draft_max
    alpha_goal: float | None = None  # ... for GOAL
    ceiling: float | None = None  # the speedup at full acceptance at draft_max
    alpha_earlier: float | None = None  # per-token acceptance of this pair in an earlier run here
    earlier_run: str | None = None  # that run's folder
    predicted_speedup: float | None = None  # the speed model's, at alpha_earlier and draft_max
    rank: int | None = None
    path: Path | None = Field(default=None, exclude=True)  # a local file (for timing and the command)
    pass_costs: PassCosts | None = Field(default=None, exclude=True)  # what the speed model priced it at


@dataclass
class Judged:
    """A GGUF judged from its header, before costs."""

    row: DraftRow
    meta: GGUFMeta | None = None
    header: GGUFHeader | None = None
    sha256: str | None = None


@dataclass
class Request:
    target: str
    candidates: list[str] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    config: Config | None = None
    max_draft: int = 16
    threads: int | None = None
    measure_costs: bool = True  # time missing pass costs with llama-bench
    results: Path | None = None  # run folders to look for earlier runs of a pair in (None: none)


def _refused(candidate: str, kind: str, reason: str) -> Judged:
    """A candidate that cannot draft for the target, or could not be read, with why."""
    return Judged(DraftRow(candidate=candidate, kind=kind, compatible=False, reason=reason))


def _local(path: Path, kind: str, name: str | None = None) -> Judged:
    row = DraftRow(candidate=name or path.name, kind=kind, source=str(path), compatible=False, path=path)
    try:
        header = read_local_header(path)
        meta = read_metadata(path)
    except ModelError as exc:
        row.reason = str(exc)
        return Judged(row)
    _describe(row, meta, header)  # a truncated file was refused by read_local_header
    return Judged(row, meta, header, cache.sha256_file(path))


def _describe(row: DraftRow, meta: GGUFMeta, header: GGUFHeader) -> None:
    row.architecture, row.parameter_count = meta.architecture, meta.parameter_count
    row.file_type, row.size_bytes = meta.file_type, meta.size_bytes
    row.tensor_types = {k: round(v, 4) for k, v in header.tensor_types().items()}
    row.bytes_per_token = header.bytes_per_token()


def _remote(model: RemoteGGUF, kind: str, name: str | None = None) -> Judged:
    row = DraftRow(
        candidate=name or model.name, kind=kind, source=f"{model.name}@{model.revision}", compatible=False
    )
    try:
        got = read_remote_header(model)
    except ModelError as exc:
        row.reason = str(exc)
        return Judged(row)
    row.header_bytes_read = got.bytes_read
    meta = header_meta(
        got.header, model.size_bytes or got.header.data_end, len(model.files), got.parameter_count
    )
    _describe(row, meta, got.header)
    return Judged(row, meta, got.header, model.sha256)


def _repo_models(repo: str, pattern: str | None, kind: str) -> list[Judged]:
    try:
        found = list_ggufs(repo, pattern=pattern)
    except ModelError as exc:
        return [_refused(repo + (f" ({pattern})" if pattern else ""), kind, str(exc))]
    if not found:
        what = f"no GGUF file matches {pattern!r}" if pattern else "it has no GGUF files"
        return [_refused(repo, kind, f"{repo}: {what}")]
    return [_remote(m, kind) for m in found]


def is_hub_name(arg: str) -> bool:
    """``owner/repo`` or ``owner/repo/path/file.gguf`` (``dir/file.gguf`` is a local path)."""
    parts = arg.split("/")
    if len(parts) == 2 and arg.endswith(".gguf"):
        return False
    return len(parts) >= 2 and all(parts) and not arg.startswith((".", "/", "~"))


def models_of(arg: str, cfg: Config | None, build: BuildInfo | None) -> list[Judged]:
    """The GGUF models an argument names: a config's model, a local file (or a folder of them), a
    Hub ``repo/file`` or a whole repo."""
    if cfg is not None and arg in cfg.models:
        return [config_model(arg, cfg.models[arg], cfg, build)]
    path = Path(arg).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.glob("*.gguf") if shard_paths(p)[0] == p)
        return [_local(p, "local") for p in files] or [_refused(arg, "local", f"{arg} holds no .gguf file")]
    if path.exists() or not is_hub_name(arg):
        return [_local(path, "local")]
    parts = arg.split("/")  # owner/repo, then the file's path in it (none: every GGUF of the repo)
    return _repo_models("/".join(parts[:2]), "/".join(parts[2:]) or None, "hub")


def config_model(name: str, spec: ModelSpec, cfg: Config, build: BuildInfo | None) -> Judged:
    """A config's model: its file when this machine has it, else (an hf model) its header on the Hub."""
    if spec.hf is not None:
        fetched = cached_hf(spec.hf)
        if fetched is not None:
            return _local(fetched.files[0], "config", name)
        found = _repo_models(spec.hf.repo, spec.hf.file or spec.hf.pattern, "config")
        if len(found) != 1:
            return _refused(
                name, "config", f"{spec.describe()} selects {len(found)} files; make it select one"
            )
        found[0].row.candidate = name
        return found[0]
    try:
        model = resolve_models(cfg.models, cfg.base_dir, build, only=[name])[name]
    except SpecbenchError as exc:  # a ModelError, or the config's own
        return _refused(name, "config", str(exc))
    return _local(model.path, "config", name)


def gather(req: Request, build: BuildInfo | None) -> tuple[Judged, list[Judged]]:
    """The target (exactly one model) and every candidate, judged against it."""
    targets = models_of(req.target, req.config, build)
    if len(targets) != 1:
        names = ", ".join(t.row.candidate for t in targets[:6])
        raise ModelError(f"target {req.target} is {len(targets)} models ({names}); name one file")
    target = targets[0]
    if target.header is None or target.meta is None:  # read with its header, or not at all
        raise ModelError(f"target {req.target}: {target.row.reason}")
    target.row.compatible = True
    cands = [m for arg in req.candidates for m in models_of(arg, req.config, build)]
    if req.config is not None and not req.candidates and not req.families:
        cfg = req.config
        cands += [config_model(n, spec, cfg, build) for n, spec in cfg.models.items() if n != req.target]
    families = load_families()
    for fam in req.families:
        if fam not in families:
            raise ModelError(f"no draft family {fam!r}; known families: {', '.join(sorted(families))}")
        for d in families[fam].drafts:
            for m in _repo_models(d.repo, d.pattern, "family"):
                m.row.family, m.row.listed_params = fam, d.params
                cands.append(m)
    for c in cands:  # each one read, checked against the target as llama.cpp will
        if c.meta is None or c.header is None or c.row.reason:
            continue
        failed = check_metadata(target.meta, c.meta) or check_tokens(target.header.tokens, c.header.tokens)
        c.row.compatible = failed is None
        c.row.reason = failed.message if failed else None
    return target, cands

"""``specbench drafts``: which draft to download for a target, ranked before anything large is fetched.

Candidates are local GGUFs, Hub files or whole repos (each GGUF in them), a config's models and the
curated family list (``models/draft_families.yaml``). A Hub candidate is judged from its header
alone, read with range requests (``models.hfheader``): architecture, parameters, tensor types,
size and token list, checked against the target as llama.cpp will (``models.paircheck``). Every
candidate is listed; one that cannot draft for the target is listed with the reason.

Costs come from this machine: the target's passes and the curve's models are timed by llama-bench
(the calibration cache ``tune`` uses; ``measure=True`` times what is missing), a candidate's decode is
estimated from its bytes per token (``tune.draftcost``), and ``analysis.speedmodel`` turns both into
the per-token acceptance each candidate needs to break even and to reach 1.5x, at its best draft
length. Candidates are ranked by that acceptance: the one that needs the least comes first. How
well a candidate will actually be accepted is the one thing the header cannot tell.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from specbench.analysis.speedmodel import expected_tokens, model_speedup
from specbench.base.errors import ModelError, RunError, SpecbenchError
from specbench.base.methods import METHODS
from specbench.builder.buildinfo import BuildInfo
from specbench.models import cache
from specbench.models.families import load_families
from specbench.models.gguffile import shard_paths
from specbench.models.ggufheader import GGUFHeader, header_meta, read_local_header
from specbench.models.hfheader import RemoteGGUF, list_ggufs, read_remote_header
from specbench.models.meta import GGUFMeta, read_metadata
from specbench.models.paircheck import check_metadata, check_tokens
from specbench.models.spec import ModelSpec
from specbench.plan.cells import speculative_flags
from specbench.plan.config import Config
from specbench.results.calibration import PassCosts
from specbench.results.cell import Cell
from specbench.tune.calibrate import pass_sizes
from specbench.tune.draftcost import (
    CURVE_KS,
    DEPTH,
    CostCurve,
    CurvePoint,
    break_even,
    fit_curve,
    free_draft,
    timed_costs,
)

GOAL = 1.5  # the speedup whose acceptance is shown beside break-even
CURVE_MAX_BYTES = 2 << 30  # cached models larger than this are not timed for the curve (too slow)


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


class CurveInfo(BaseModel):
    a_ms: float
    b_ms_per_gb: float
    rel_error: float | None
    points: list[dict]


class DraftsResult(BaseModel):
    target: DraftRow
    target_costs: str  # where the target's pass costs came from: cache | measured | estimated | none
    rows: list[DraftRow]
    curve: CurveInfo | None = None
    goal: float = GOAL
    depth: int = DEPTH
    notes: list[str] = Field(default_factory=list)
    server_command: str | None = None


@dataclass
class _Model:
    """A GGUF judged from its header, before costs."""

    row: DraftRow
    meta: GGUFMeta | None = None
    header: GGUFHeader | None = None
    sha256: str | None = None


def earlier_alpha(target_sha: str, draft_sha: str, base: Path) -> tuple[float, str] | None:
    """The per-token acceptance of this exact pair (by sha256) in the run folders under ``base``:
    fitted to every draft cell's tokens per pass (``speedmodel.fit_alpha``), with the last run's folder."""
    from specbench.analysis.cells import ALL
    from specbench.analysis.report import aggregate
    from specbench.analysis.speedmodel import fit_alpha
    from specbench.results.folder import run_folders
    from specbench.results.manifestfile import manifest_data

    points: list[tuple[int, float]] = []
    where = None
    for run in sorted(run_folders(base)):
        try:
            models = manifest_data(run).get("models") or {}
        except SpecbenchError:
            continue
        shas = {k: v.get("sha256") for k, v in models.items() if isinstance(v, dict)}
        targets = {k for k, v in shas.items() if v == target_sha}
        drafts = {k for k, v in shas.items() if v == draft_sha}
        if not targets or not drafts:
            continue
        try:
            rows = aggregate([run])
        except SpecbenchError:
            continue
        for r in rows:
            if (r.category == ALL and r.method == "draft" and r.target in targets and r.draft in drafts
                    and r.draft_max and r.tokens_per_pass and not r.synthetic):  # fmt: skip
                points.append((r.draft_max, r.tokens_per_pass))
                where = str(run)
    alpha = fit_alpha(points)
    return None if alpha is None or where is None else (alpha, where)


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


def _local(path: Path, kind: str, name: str | None = None) -> _Model:
    row = DraftRow(candidate=name or path.name, kind=kind, source=str(path), compatible=False, path=path)
    try:
        header = read_local_header(path)
        meta = read_metadata(path)
    except ModelError as exc:
        row.reason = str(exc)
        return _Model(row)
    _describe(row, meta, header)
    if header.data_end > path.stat().st_size and meta.n_shards == 1:
        row.reason = (
            f"{path} is truncated: its tensors need {header.data_end} bytes, the file has {meta.size_bytes}"
        )
        return _Model(row, meta)
    return _Model(row, meta, header, cache.sha256_file(path))


def _describe(row: DraftRow, meta: GGUFMeta, header: GGUFHeader) -> None:
    row.architecture, row.parameter_count = meta.architecture, meta.parameter_count
    row.file_type, row.size_bytes = meta.file_type, meta.size_bytes
    row.tensor_types = {k: round(v, 4) for k, v in header.tensor_types().items()}
    row.bytes_per_token = header.bytes_per_token()


def _remote(model: RemoteGGUF, kind: str, name: str | None = None) -> _Model:
    row = DraftRow(
        candidate=name or model.name, kind=kind, source=f"{model.name}@{model.revision}", compatible=False
    )
    try:
        got = read_remote_header(model)
    except ModelError as exc:
        row.reason = str(exc)
        return _Model(row)
    row.header_bytes_read = got.bytes_read
    meta = header_meta(
        got.header, model.size_bytes or got.header.data_end, len(model.files), got.parameter_count
    )
    _describe(row, meta, got.header)
    return _Model(row, meta, got.header, model.sha256)


def _repo_models(repo: str, pattern: str | None, kind: str) -> list[_Model]:
    try:
        found = list_ggufs(repo, pattern=pattern)
    except ModelError as exc:
        return [
            _Model(
                DraftRow(
                    candidate=repo + (f" ({pattern})" if pattern else ""),
                    kind=kind,
                    compatible=False,
                    reason=str(exc),
                )
            )
        ]
    if not found:
        what = f"no GGUF file matches {pattern!r}" if pattern else "it has no GGUF files"
        return [_Model(DraftRow(candidate=repo, kind=kind, compatible=False, reason=f"{repo}: {what}"))]
    return [_remote(m, kind) for m in found]


def _is_hub_name(arg: str) -> bool:
    """``owner/repo`` or ``owner/repo/path/file.gguf`` (``dir/file.gguf`` is a local path)."""
    parts = arg.split("/")
    if len(parts) == 2 and arg.endswith(".gguf"):
        return False
    return len(parts) >= 2 and all(parts) and not arg.startswith((".", "/", "~"))


def models_of(arg: str, cfg: Config | None, build: BuildInfo | None, kind: str | None = None) -> list[_Model]:
    """The GGUF models an argument names: a config's model, a local file (or a folder of them), a
    Hub ``repo/file`` or a whole repo."""
    if cfg is not None and arg in cfg.models:
        return [_config_model(arg, cfg.models[arg], cfg, build)]
    path = Path(arg).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.glob("*.gguf") if shard_paths(p)[0] == p)
        return [_local(p, kind or "local") for p in files] or [
            _Model(
                DraftRow(candidate=arg, kind="local", compatible=False, reason=f"{arg} holds no .gguf file")
            )
        ]
    if path.exists() or not _is_hub_name(arg):
        return [_local(path, kind or "local")]
    parts = arg.split("/")
    if len(parts) == 2:
        return _repo_models(arg, None, kind or "hub")
    repo, file = "/".join(parts[:2]), "/".join(parts[2:])
    return _repo_models(repo, file, kind or "hub")


def _config_model(name: str, spec: ModelSpec, cfg: Config, build: BuildInfo | None) -> _Model:
    """A config's model: its file when this machine has it, else (an hf model) its header on the Hub."""
    from specbench.models import resolve_models
    from specbench.models.hf import cached_hf

    if spec.hf is not None:
        fetched = cached_hf(spec.hf)
        if fetched is not None:
            return _local(fetched.files[0], "config", name)
        found = _repo_models(spec.hf.repo, spec.hf.file or spec.hf.pattern, "config")
        if len(found) == 1:
            found[0].row.candidate = name
        return (
            found[0]
            if len(found) == 1
            else _Model(
                DraftRow(
                    candidate=name,
                    kind="config",
                    compatible=False,
                    reason=f"{spec.describe()} selects {len(found)} files; make it select one",
                )
            )
        )
    try:
        model = resolve_models(cfg.models, cfg.base_dir, build, only=[name])[name]
    except (ModelError, SpecbenchError) as exc:
        return _Model(DraftRow(candidate=name, kind="config", compatible=False, reason=str(exc)))
    return _local(model.path, "config", name)


def _compatibility(target: _Model, cand: _Model) -> None:
    if cand.meta is None or cand.header is None or cand.row.reason:
        return
    assert target.meta is not None and target.header is not None
    failed = check_metadata(target.meta, cand.meta) or check_tokens(target.header.tokens, cand.header.tokens)
    cand.row.compatible = failed is None
    cand.row.reason = failed.message if failed else None


def gather(req: Request, build: BuildInfo | None) -> tuple[_Model, list[_Model]]:
    """The target (exactly one model) and every candidate, judged against it."""
    targets = models_of(req.target, req.config, build)
    if len(targets) != 1:
        names = ", ".join(t.row.candidate for t in targets[:6])
        raise ModelError(f"target {req.target} is {len(targets)} models ({names}); name one file")
    target = targets[0]
    if target.header is None:
        raise ModelError(f"target {req.target}: {target.row.reason}")
    target.row.compatible = True
    cands: list[_Model] = []
    for arg in req.candidates:
        cands += models_of(arg, req.config, build)
    if req.config is not None and not req.candidates and not req.families:
        for name in req.config.models:
            if name != req.target:
                cands.append(_config_model(name, req.config.models[name], req.config, build))
    families = load_families()
    for fam in req.families:
        if fam not in families:
            raise ModelError(f"no draft family {fam!r}; known families: {', '.join(sorted(families))}")
        for d in families[fam].drafts:
            for m in _repo_models(d.repo, d.pattern, "family"):
                m.row.family, m.row.listed_params = fam, d.params
                cands.append(m)
    for c in cands:
        _compatibility(target, c)
    return target, cands


def _curve(
    build: BuildInfo, local: list[_Model], threads: int | None, measure: bool, note: Callable[[str], None]
) -> CostCurve | None:
    """The cost curve from every local model (the target, local candidates, the model cache)."""
    from specbench.models.listing import list_cached

    seen: dict[str, tuple[str, Path, GGUFHeader]] = {}
    for m in local:
        if m.sha256 and m.header is not None and m.row.path is not None:
            seen.setdefault(m.sha256, (m.row.candidate, m.row.path, m.header))
    for c in list_cached():
        if (
            c.metadata is None
            or c.size_bytes > CURVE_MAX_BYTES
            or c.metadata.n_shards > 1
            or c.path.name[0] == "."
        ):
            continue
        try:
            header = read_local_header(c.path)
        except ModelError:
            continue
        if header.data_end <= c.path.stat().st_size:
            seen.setdefault(cache.sha256_file(c.path), (c.path.name, c.path, header))
    points = []
    for sha, (name, path, header) in seen.items():
        try:
            got = timed_costs(build, name, path, sha, CURVE_KS, threads=threads, measure=measure, note=note)
        except RunError as exc:  # a model llama-bench cannot run (a head, another arch): not a point
            note(f"left out of the cost curve: {exc}")
            continue
        if got is not None:
            points.append(
                CurvePoint(
                    name=name,
                    sha256=sha,
                    bytes_per_token=header.bytes_per_token(),
                    costs=got[0],
                    cached=got[1],
                )
            )
    return fit_curve(points)


def rank(
    req: Request, build: BuildInfo | None, note: Callable[[str], None] = lambda line: None
) -> DraftsResult:
    """Judge, price and rank every candidate of ``req`` against its target."""
    target, cands = gather(req, build)
    notes: list[str] = []
    curve, t_costs, source = None, None, "none"
    if build is None:
        notes.append("no llama.cpp build here, so no costs: run `specbench build` to rank by cost")
    else:
        if target.row.path is not None and target.sha256:  # first: the curve then finds it cached
            ks = sorted(set(pass_sizes(req.max_draft, level=2)) | set(CURVE_KS))
            got = timed_costs(
                build,
                target.row.candidate,
                target.row.path,
                target.sha256,
                ks,
                threads=req.threads,
                measure=req.measure_costs,
                note=note,
            )
            if got is not None:
                t_costs, source = got[0], "cache" if got[1] else "measured"
        local = [m for m in [target, *cands] if m.row.path is not None and m.sha256]
        curve = _curve(build, local, req.threads, req.measure_costs, note)
        if t_costs is None and curve is not None and target.row.bytes_per_token:
            est = curve.estimate(target.row.bytes_per_token)
            t_costs, source = curve.pass_costs(target.row.candidate, est.decode_s), "estimated"
            notes.append("the target's pass costs are estimated from its size (not timed here)")
        if curve is None:
            notes.append(
                "no model on this machine has been timed, so no cost curve: "
                "leave out --no-measure to time the cached models with llama-bench"
            )
        elif curve.rel_error is None:
            notes.append(
                f"the cost curve rests on {len(curve.points)} model(s): its error is not known "
                "until 3 have been timed"
            )
    target.row.pass_costs = t_costs
    if t_costs is not None:
        target.row.decode_ms_measured = t_costs.decode_s * 1e3 if source in ("cache", "measured") else None
    if curve is not None and target.row.bytes_per_token:
        _estimate(target.row, curve)
    for c in cands:
        if curve is not None and c.row.bytes_per_token:
            _estimate(c.row, curve)
            if c.sha256:
                point = next((p for p in curve.points if p.sha256 == c.sha256), None)
                c.row.decode_ms_measured = point.costs.decode_s * 1e3 if point else None
        if t_costs is not None and curve is not None and c.row.compatible and c.row.decode_ms is not None:
            point = next((p for p in curve.points if c.sha256 and p.sha256 == c.sha256), None)
            c.row.priced_by = "measured" if point else "estimated"  # a timed model is priced as timed
            d_costs = point.costs if point else curve.pass_costs(c.row.candidate, c.row.decode_ms / 1e3)
            c.row.pass_costs = d_costs
            _break_even(c.row, t_costs, d_costs, req.max_draft)
            if req.results is not None and c.sha256 and target.sha256 and c.row.draft_max:
                found = earlier_alpha(target.sha256, c.sha256, req.results)
                if found is not None:
                    g = c.row.draft_max
                    c.row.alpha_earlier, c.row.earlier_run = found
                    c.row.predicted_speedup = model_speedup(t_costs, d_costs, g, expected_tokens(found[0], g))
    rows = [c.row for c in cands]
    ngram = []
    for method in ngram_methods(build):
        row = DraftRow(
            candidate=method, kind="ngram", compatible=True, reason=None if t_costs else "no target costs"
        )
        if t_costs is not None:
            _break_even(row, t_costs, free_draft(method), req.max_draft)
        ngram.append(row)
    ordered = sorted(rows, key=_rank_key)
    for i, r in enumerate(r for r in ordered if r.compatible and r.alpha_break_even is not None):
        r.rank = i + 1
    result = DraftsResult(
        target=target.row, target_costs=source, rows=ordered + ngram, notes=notes, curve=_curve_info(curve)
    )
    result.server_command = server_command(result, build)
    return result


def ngram_methods(build: BuildInfo | None) -> list[str]:
    """The draft-free (lookup) methods: those the build's --spec-type takes, when it was probed."""
    lookups = [name for name, m in METHODS.items() if m.lookup]
    if build is None:
        return lookups
    known = {t for b in build.binaries.values() for t in b.flags.spec_types}
    return [name for name in lookups if name in known] if known else lookups


def _estimate(row: DraftRow, curve: CostCurve) -> None:
    assert row.bytes_per_token is not None
    est = curve.estimate(row.bytes_per_token)
    row.decode_ms = est.decode_s * 1e3
    row.decode_ms_low = est.low * 1e3 if est.low is not None else None
    row.decode_ms_high = est.high * 1e3 if est.high is not None else None


def _break_even(row: DraftRow, target: PassCosts, draft: PassCosts, max_draft: int) -> None:
    be = break_even(target, draft, max_draft, GOAL)
    row.draft_max, row.alpha_break_even, row.alpha_goal, row.ceiling = (
        be.g,
        be.alpha_break_even,
        be.alpha_target,
        be.ceiling,
    )


def _rank_key(r: DraftRow) -> tuple:
    """Compatible and priced first, by the acceptance they need (1.5x, then break-even), then size."""
    return (
        not r.compatible,
        r.alpha_break_even is None,
        r.alpha_goal if r.alpha_goal is not None else 2.0,
        r.alpha_break_even if r.alpha_break_even is not None else 2.0,
        r.size_bytes or 0,
        r.candidate,
    )


def _curve_info(curve: CostCurve | None) -> CurveInfo | None:
    if curve is None:
        return None
    points = [
        {
            "model": p.name,
            "bytes_per_token": p.bytes_per_token,
            "decode_ms": p.costs.decode_s * 1e3,
            "loo_error": curve.errors.get(p.name),
            "cached": p.cached,
        }
        for p in curve.points
    ]
    return CurveInfo(
        a_ms=curve.a * 1e3, b_ms_per_gb=curve.b * 1e3 * 1e9, rel_error=curve.rel_error, points=points
    )


def _fetch_arg(row: DraftRow) -> str:
    """A model as the command line takes it: its path, or the path `hf download` prints for it."""
    if row.path is not None:
        return shlex.quote(str(row.path))
    assert row.source is not None
    name, _, revision = row.source.rpartition("@")
    repo, file = "/".join(name.split("/")[:2]), "/".join(name.split("/")[2:])
    return f'"$(hf download {shlex.quote(repo)} {shlex.quote(file)} --revision {revision})"'


def server_command(result: DraftsResult, build: BuildInfo | None) -> str | None:
    """llama-server with the best-ranked draft at its draft length (spelled as the build's --help)."""
    best = next((r for r in result.rows if r.rank == 1), None)
    if best is None or best.draft_max is None or result.target.source is None:
        return None
    server = build.binaries.get("server") if build is not None else None
    from specbench.builder.buildinfo import FlagSpelling

    pinned = FlagSpelling(draft_max="--spec-draft-n-max", spec_type="--spec-type", model_draft="-md",
                          spec_types=["draft-simple"])  # fmt: skip
    flags = server.flags if server is not None and server.flags.draft_max else pinned
    cell = Cell(model="target", draft="draft", method="draft", draft_max=best.draft_max)
    argv = [
        server.path if server else "llama-server",
        "-m",
        "TARGET",
        *speculative_flags(flags, cell, "DRAFT"),
    ]
    text = shlex.join(argv)
    return text.replace("TARGET", _fetch_arg(result.target)).replace("DRAFT", _fetch_arg(best))


def pick_build() -> BuildInfo | None:
    """The build whose llama-bench prices the candidates: the newest cached build of the source tree
    with llama-bench (nothing is built to rank); None when there is none (ranked without costs, said
    in a note)."""
    from specbench.base import paths

    found = [b for b in BuildInfo.load_all(paths.builds_dir()) if "bench" in b.binaries]
    # a build of a commit exported by ab/bisect (``ref``) only when no build of the source tree is
    # there: the tree's build is the one `run` uses
    return max(found, key=lambda b: (b.ref is None, b.built_at), default=None)

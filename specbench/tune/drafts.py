"""``specbench drafts``: which draft to download for a target, ranked before anything large is fetched.

Which models are candidates, and whether each can draft for the target, is ``tune.draftmodels``'.
Costs come from this machine. A decode is bound by reading the weights, so a model's time per token
is close to ``a + b · bytes read per token``, a line fitted to the models this machine has timed with
llama-bench (tune's calibration cache); its largest leave-one-out error is the range of an estimate.
Passes over k tokens are priced at the timed models' median pass(k) / decode. ``break_even`` then
finds the per-token acceptance each draft length needs for a speedup, and the length that needs the
least. Each candidate is ranked by the per-token acceptance it needs to reach 1.5x at its best draft
length, the least first: how well it will be accepted is the one thing its header cannot tell.
"""

from __future__ import annotations

import shlex
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from specbench.analysis.cells import ALL
from specbench.analysis.report import aggregate
from specbench.analysis.speedmodel import expected_tokens, fit_alpha, model_speedup
from specbench.base import paths
from specbench.base.errors import ModelError, RunError, SpecbenchError
from specbench.base.llamaopts import DRAFT_LENGTH, METHOD
from specbench.base.methods import DRAFT_SIMPLE, LOOKUPS
from specbench.builder.buildinfo import BuildInfo, FlagSpelling
from specbench.builder.workaround import with_workaround
from specbench.models import cache
from specbench.models.cache import list_cached
from specbench.models.ggufheader import GGUFHeader, read_local_header
from specbench.plan.cells import speculative_flags
from specbench.results.calibration import PassCosts
from specbench.results.cell import Cell
from specbench.results.folder import run_folders
from specbench.results.manifestfile import read_facts
from specbench.tune.calibrate import cached_costs, measure_model, pass_sizes, store
from specbench.tune.draftmodels import DraftRow, Judged, Request, gather

CURVE_KS = [1, 2, 3, 5, 9, 17]  # the passes timed for a curve model (and priced for a draft)
DEPTH = 256  # tokens in the KV cache while timing: a short prompt's worth
GOAL = 1.5  # the speedup whose acceptance is shown beside break-even
CURVE_MAX_BYTES = 2 << 30  # cached models larger than this are not timed for the curve (too slow)


class CurvePoint(BaseModel):
    """One model timed by llama-bench: its bytes per token and its pass costs."""

    name: str
    sha256: str | None
    bytes_per_token: int
    costs: PassCosts
    cached: bool = True  # from the calibration cache (False: timed by this command)


class Estimate(BaseModel):
    """A decode time estimated from the curve; ``low``/``high``: its range (None: not known)."""

    decode_s: float
    low: float | None = None
    high: float | None = None


@dataclass
class CostCurve:
    """ms per token = a + b · bytes per token, fitted to ``points``; ``rel_error``: the largest
    leave-one-out relative error (None with fewer than 3 points: nothing left to test it on)."""

    a: float
    b: float
    points: list[CurvePoint]
    rel_error: float | None
    errors: dict[str, float] = field(default_factory=dict)  # each point's leave-one-out error

    def estimate(self, bytes_per_token: int) -> Estimate:
        d = max(self.a + self.b * bytes_per_token, 1e-6)
        if self.rel_error is None:
            return Estimate(decode_s=d)
        return Estimate(decode_s=d, low=d / (1 + self.rel_error), high=d * (1 + self.rel_error))

    def pass_costs(self, name: str, decode_s: float) -> PassCosts:
        """A model's passes priced from its decode time and the curve models' median ratios."""
        ratios: dict[int, list[float]] = {}
        for p in self.points:
            for k, s in p.costs.curve().items():
                if p.costs.decode_s > 0:
                    ratios.setdefault(k, []).append(s / p.costs.decode_s)
        pass_s = {k: decode_s * statistics.median(v) for k, v in sorted(ratios.items())}
        return PassCosts(model=name, decode_s=decode_s, pass_s=pass_s)


def _line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares a + b·x with a, b >= 0 (a fixed cost and a cost per byte are never negative:
    a fit that says so is noise, so that term is held at 0); through the origin for one x."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    if len(set(xs)) < 2:
        return 0.0, sum(ys) / max(sum(xs), 1.0)
    slope, intercept = statistics.linear_regression(xs, ys)
    if slope < 0:
        return statistics.fmean(ys), 0.0
    if intercept < 0:
        return 0.0, statistics.linear_regression(xs, ys, proportional=True).slope
    return intercept, slope


def fit_curve(points: list[CurvePoint]) -> CostCurve | None:
    """The line through the points (None without any); leave-one-out errors from 3 points on."""
    xy = [(float(p.bytes_per_token), p.costs.decode_s) for p in points]
    if not xy:
        return None
    a, b = _line(xy)
    errors: dict[str, float] = {}
    if len(xy) >= 3:
        for i, p in enumerate(points):
            ai, bi = _line(xy[:i] + xy[i + 1 :])
            errors[p.name] = (ai + bi * xy[i][0]) / xy[i][1] - 1  # predicted / measured
    rel = max((abs(e) for e in errors.values()), default=None)
    return CostCurve(a, b, points, rel, errors)


def _lock():
    from filelock import FileLock

    folder = paths.calibration_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return FileLock(str(folder / "llama-bench.lock"))


def timed_costs(
    build: BuildInfo,
    name: str,
    path: Path,
    sha256: str | None,
    ks: list[int],
    *,
    threads: int | None,
    measure: bool,
    note: Callable[[str], None] = lambda line: None,
) -> tuple[PassCosts, bool] | None:
    """A model's pass costs at ``DEPTH`` and whether they were cached; else (``measure``) timed now by
    llama-bench, one process at a time, and cached unless impossible; else None."""
    hit = cached_costs(build.key, sha256, threads, 0, DEPTH)
    if hit is not None and set(ks) <= set(hit.costs.pass_s):
        return hit.costs.model_copy(update={"model": name}), True
    if not measure:
        return None
    note(f"timing {name} with llama-bench (passes over {', '.join(map(str, ks))} tokens)")
    with _lock():
        entry, cached = measure_model(
            build, name, str(path), sha256, ks=ks, depth=DEPTH, threads=threads, ngl=0
        )
        if not cached and entry.costs.impossible() is None:
            store(entry)
    return entry.costs, cached  # named ``name`` by measure_model, cached or not


@dataclass(frozen=True)
class BreakEven:
    """The draft length that needs the least acceptance, and what it needs."""

    g: int
    alpha_break_even: float | None  # per-token acceptance for a speedup of 1.0 (None: never)
    alpha_target: float | None  # ... for the target speedup (1.5x)
    ceiling: float  # the speedup at full acceptance, at this g


def alpha_for_speedup(target: PassCosts, draft: PassCosts, g: int, speedup: float) -> float | None:
    """The least per-token acceptance α at which drafting g tokens reaches ``speedup`` (the model's
    speedup grows with α); None when even α = 1 does not."""

    def at(alpha: float) -> float:
        return model_speedup(target, draft, g, expected_tokens(alpha, g))

    if at(1.0) < speedup:
        return None
    if at(0.0) >= speedup:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if at(mid) < speedup else (lo, mid)
    return hi


def break_even(target: PassCosts, draft: PassCosts, max_draft: int = 16, goal: float = 1.5) -> BreakEven:
    """The g in 1..max_draft that needs the least acceptance for ``goal`` (else for 1.0)."""
    rows = []
    for g in range(1, max_draft + 1):
        be, tg = alpha_for_speedup(target, draft, g, 1.0), alpha_for_speedup(target, draft, g, goal)
        rows.append(BreakEven(g, be, tg, model_speedup(target, draft, g, g + 1.0)))
    reach = [r for r in rows if r.alpha_target is not None]
    if reach:
        return min(reach, key=lambda r: (r.alpha_target, r.g))
    even = [r for r in rows if r.alpha_break_even is not None]
    if even:
        return min(even, key=lambda r: (r.alpha_break_even, r.g))
    return max(rows, key=lambda r: r.ceiling)


def free_draft(name: str) -> PassCosts:
    """An n-gram method's draft: its lookups cost next to nothing beside a pass."""
    return PassCosts(model=name, decode_s=0.0)


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


def earlier_alpha(target_sha: str, draft_sha: str, base: Path) -> tuple[float, str] | None:
    """The per-token acceptance of this exact pair (by sha256) in the run folders under ``base``:
    fitted to every draft cell's tokens per pass (``speedmodel.fit_alpha``), with the last run's folder."""
    points: list[tuple[int, float]] = []
    where = None
    for run in sorted(run_folders(base)):
        try:
            shas = read_facts(run).models
        except SpecbenchError:
            continue
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


def _curve(
    build: BuildInfo, local: list[Judged], threads: int | None, measure: bool, note: Callable[[str], None]
) -> CostCurve | None:
    """The cost curve from every local model (the target, local candidates, the model cache)."""
    seen: dict[str, tuple[str, Path, GGUFHeader]] = {}
    for m in local:
        if m.sha256 and m.header is not None and m.row.path is not None:
            seen.setdefault(m.sha256, (m.row.candidate, m.row.path, m.header))
    for c in list_cached():
        small = c.size_bytes <= CURVE_MAX_BYTES and not c.path.name.startswith(".")
        if c.metadata is None or c.metadata.n_shards > 1 or not small:
            continue
        try:
            header = read_local_header(c.path)  # refuses a truncated file too
        except ModelError:
            continue
        seen.setdefault(cache.sha256_file(c.path), (c.path.name, c.path, header))
    points = []
    for sha, (name, path, header) in seen.items():
        try:
            got = timed_costs(build, name, path, sha, CURVE_KS, threads=threads, measure=measure, note=note)
        except RunError as exc:  # a model llama-bench cannot run (a head, another arch): not a point
            note(f"left out of the cost curve: {exc}")
            continue
        if got is not None:
            bpt, (costs, cached) = header.bytes_per_token(), got
            points.append(CurvePoint(name=name, sha256=sha, bytes_per_token=bpt, costs=costs, cached=cached))
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
        point = next((p for p in curve.points if c.sha256 and p.sha256 == c.sha256), None) if curve else None
        if curve is not None and c.row.bytes_per_token:
            _estimate(c.row, curve)
            c.row.decode_ms_measured = point.costs.decode_s * 1e3 if point else None
        if t_costs is not None and curve is not None and c.row.compatible and c.row.decode_ms is not None:
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
    ngram = []
    for method in ngram_methods(build):
        row = DraftRow(
            candidate=method, kind="ngram", compatible=True, reason=None if t_costs else "no target costs"
        )
        if t_costs is not None:
            _break_even(row, t_costs, free_draft(method), req.max_draft)
        ngram.append(row)
    ordered = sorted((c.row for c in cands), key=_rank_key)
    for i, r in enumerate(r for r in ordered if r.compatible and r.alpha_break_even is not None):
        r.rank = i + 1
    result = DraftsResult(
        target=target.row, target_costs=source, rows=ordered + ngram, notes=notes, curve=_curve_info(curve)
    )
    result.server_command = server_command(result, build)
    return result


def ngram_methods(build: BuildInfo | None) -> list[str]:
    """The draft-free (lookup) methods: those the build's --spec-type takes, when it was probed."""
    known = {t for b in build.binaries.values() for t in b.flags.spec_types} if build is not None else set()
    return [name for name in LOOKUPS if name in known] if known else list(LOOKUPS)


def _estimate(row: DraftRow, curve: CostCurve) -> None:
    assert row.bytes_per_token is not None
    est = curve.estimate(row.bytes_per_token)
    row.decode_ms = est.decode_s * 1e3
    row.decode_ms_low = est.low * 1e3 if est.low is not None else None
    row.decode_ms_high = est.high * 1e3 if est.high is not None else None


def _break_even(row: DraftRow, target: PassCosts, draft: PassCosts, max_draft: int) -> None:
    be = break_even(target, draft, max_draft, GOAL)
    row.draft_max, row.alpha_break_even = be.g, be.alpha_break_even
    row.alpha_goal, row.ceiling = be.alpha_target, be.ceiling


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
    pinned = FlagSpelling(draft_max=DRAFT_LENGTH.spellings[0], spec_type=METHOD.spellings[0],
                          model_draft="-md", spec_types=[DRAFT_SIMPLE])  # fmt: skip
    flags = server.flags if server is not None and server.flags.draft_max else pinned
    cell = Cell(model="target", draft="draft", method="draft", draft_max=best.draft_max)
    argv = [*(server.argv0 if server else ["llama-server"]), "-m", "TARGET"]
    argv += speculative_flags(flags, cell, "DRAFT")
    argv = with_workaround(argv, build, "server")  # as every run of this build gets it (none: unchanged)
    text = shlex.join(argv)
    return text.replace("TARGET", _fetch_arg(result.target)).replace("DRAFT", _fetch_arg(best))


def pick_build() -> BuildInfo | None:
    """The newest cached build with llama-bench, to price the candidates (nothing is built to rank);
    None when there is none."""
    found = [b for b in BuildInfo.load_all(paths.builds_dir()) if "bench" in b.binaries]
    # a build of a commit ab/bisect exported (``ref``) only without one of the tree, which `run` uses
    return max(found, key=lambda b: (b.ref is None, b.built_at), default=None)

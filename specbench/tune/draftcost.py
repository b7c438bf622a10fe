"""What a draft would cost on this machine before it is downloaded, and the acceptance it then needs.

A decode is bound by reading the weights, so a model's time per token is close to ``a + b · bytes
read per token``, a line fitted to the models this machine has timed with llama-bench (tune's
calibration cache); its largest leave-one-out error is the range of an estimate. Passes over k
tokens are priced at the timed models' median pass(k) / decode. ``break_even`` then finds the
per-token acceptance each draft length needs for a speedup, and the length that needs the least.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from specbench.analysis.speedmodel import expected_tokens, model_speedup
from specbench.base import paths
from specbench.builder.buildinfo import BuildInfo
from specbench.results.calibration import PassCosts
from specbench.tune.calibrate import cached_costs, measure_model, store

CURVE_KS = [1, 2, 3, 5, 9, 17]  # the passes timed for a curve model (and priced for a draft)
DEPTH = 256  # tokens in the KV cache while timing: a short prompt's worth


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

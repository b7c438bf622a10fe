"""``specbench run`` reuses a calibration ``specbench tune`` cached on this machine.

A run's report gets a ``model`` column (``model_speedup``) when the cache holds the pass costs of a
pair's target and draft for this build, models, threads and GPU layers, at a KV depth within
``DEPTH_TOLERANCE`` of the run's; the copy in the run folder says where and when it was measured.
"""

from __future__ import annotations

from pathlib import Path

from specbench.execute.preparation import Prepared
from specbench.results.calibration import Calibration
from specbench.tune.calibrate import cached_costs
from specbench.tune.rounds import kv_depth

DEPTH_TOLERANCE = 0.25  # a pass at depth 300 or 375 costs about the same; twice as deep does not


def cached_calibration(prepared: Prepared, run_dir: Path) -> Calibration | None:
    """The cached calibration of every (target, draft) pair of the run that has one, or None."""
    cfg, build = prepared.config, prepared.build.key
    threads = cfg.generation.threads
    depth = kv_depth(run_dir, cfg.generation.n_predict)
    entries = {}
    for pair in cfg.pairs.values():
        if pair.draft is None:
            continue
        wanted = [(pair.target, ngl) for ngl in cfg.sweep.ngl] + [(pair.draft, n) for n in cfg.sweep.ngld]
        found = {}
        for name, layers in wanted:
            sha = getattr(prepared.models.get(name), "sha256", None)
            hit = cached_costs(build, sha, threads, layers, depth, DEPTH_TOLERANCE) if sha else None
            if hit is not None:
                found[(name, layers)] = hit
        if any(k[0] == pair.target for k in found) and any(k[0] == pair.draft for k in found):
            entries.update(found)
    if not entries:
        return None
    hits = list(entries.values())
    return Calibration(
        build=build, threads=threads, depth=hits[0].depth,
        repetitions=min(e.repetitions for e in hits),
        models=[e.costs.model_copy(update={"model": n, "ngl": g}) for (n, g), e in entries.items()],
        measured_at=min(e.measured_at for e in hits), source="cache",
    )  # fmt: skip


def reuse_calibration(prepared: Prepared, run_dir: Path) -> None:
    """A calibration `specbench tune` cached for these models here gives the report its model column."""
    from specbench.results.calibration import load_calibration, save_calibration

    if load_calibration(run_dir) is None and (cal := cached_calibration(prepared, run_dir)) is not None:
        save_calibration(run_dir, cal)

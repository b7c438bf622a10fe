"""What a calibration is: the measured cost of each forward pass a speculative step makes.

Written by ``specbench tune`` (``specbench.tune.calibrate``) into the run folder, read by the report
to compute ``model_speedup``; its file (``calibration.json``) is written atomically, like the
manifest, and a run without one (a plain ``specbench run``) reads as None.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from specbench.base.errors import RunError
from specbench.base.files import write_atomic
from specbench.base.formats import json_text
from specbench.results.folder import CALIBRATION

MONOTONIC_SLACK = 0.25  # a longer pass may time this much below a shorter one (llama-bench noise)


class PassCosts(BaseModel):
    """One model's cost, in seconds, of a forward pass over k tokens at a KV depth (llama-bench)."""

    model: str  # config name
    sha256: str | None = None
    ngl: int = 0
    decode_s: float  # one token decoded after another (llama-bench tg), per token
    pass_s: dict[int, float] = Field(default_factory=dict)  # k -> seconds for one pass over k tokens

    def cost(self, k: float) -> float:
        """Seconds for a pass over ``k`` tokens: measured, else linear between the measured k's
        (beyond the largest, extended with the slope of the last two)."""
        if k <= 1:
            return self.decode_s
        pts = sorted(self.pass_s.items())
        if not pts:
            return self.decode_s * k
        if k == int(k) and int(k) in self.pass_s:  # a measured k (a mean draft length is a float)
            return self.pass_s[int(k)]
        lo = [(x, y) for x, y in pts if x < k]
        hi = [(x, y) for x, y in pts if x > k]
        if lo and hi:
            (x0, y0), (x1, y1) = lo[-1], hi[0]
        elif len(pts) >= 2:
            (x0, y0), (x1, y1) = pts[-2], pts[-1]
        else:
            return pts[0][1] * k / pts[0][0]
        return y0 + (y1 - y0) * (k - x0) / (x1 - x0)

    def not_monotonic(self, slack: float = MONOTONIC_SLACK) -> str | None:
        """Why these costs cannot be right (a pass over more tokens timed far below one over fewer:
        the machine was busy during the shorter one), or None. A forward pass never gets cheaper
        with more tokens; ``slack`` leaves room for llama-bench's own jitter on flat GPU costs."""
        worst_k, worst = 0, 0.0
        for k, s in sorted(self.pass_s.items()):
            if worst > 0 and s < worst * (1 - slack):
                return (f"{self.model}: a pass over {k} tokens took {s:.4g} s, one over {worst_k} "
                        f"took {worst:.4g} s")  # fmt: skip
            if s > worst:
                worst_k, worst = k, s
        return None


class Calibration(BaseModel):
    """Pass costs of every model of a tuned pair, measured on this machine with this build."""

    build: str  # BuildInfo.key
    threads: int | None = None
    depth: int  # tokens already in the KV cache when the passes were timed
    repetitions: int = 2
    models: list[PassCosts] = Field(default_factory=list)
    measured_at: str | None = None  # when llama-bench ran (the oldest model's, when from the cache)
    source: str = "measured"  # measured (by this tune) | cache (SPECBENCH_HOME/calibration, e.g. for a run)

    def describe(self) -> str:
        """Which calibration this is, for a report: where it came from, when, at what KV depth."""
        when = f" {self.measured_at[:16].replace('T', ' ')}" if self.measured_at else ""
        how = "from the calibration cache" if self.source == "cache" else "measured by specbench tune"
        return f"llama-bench{when} at KV depth {self.depth}, {how} (build {self.build})"

    def costs(self, model: str, ngl: int | None) -> PassCosts | None:
        for m in self.models:
            if m.model == model and m.ngl == (ngl or 0):
                return m
        return None


def save_calibration(run_dir: Path, calibration: Calibration) -> None:
    """Write atomically, like the manifest."""
    path = run_dir / CALIBRATION
    try:
        write_atomic(path, json_text(calibration, ensure_ascii=False))
    except OSError as exc:
        raise RunError(f"cannot write {path}: {exc.strerror or exc}; free space or fix permissions") from exc


def load_calibration(run_dir: Path) -> Calibration | None:
    """The run's calibration, or None when it has none (a plain `specbench run`) or it is unreadable."""
    path = run_dir / CALIBRATION
    try:
        return Calibration.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None

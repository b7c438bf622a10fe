"""What a calibration is: the measured cost of each forward pass a speculative step makes.

Written by ``specbench tune`` into the run folder (atomically), read by the report for ``model_speedup``.
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel, Field

from specbench.base.formats import json_text
from specbench.results.folder import CALIBRATION, write_whole

# A longer pass may time below a shorter one by this share of the shorter's cost (jitter between
# llama-bench's tests) plus NOISE_Z of the two passes' standard deviations (llama-bench's own).
NOISE_SLACK = 0.25
NOISE_Z = 3.0


def pooled(values: list[float]) -> list[float]:
    """The non-decreasing sequence nearest ``values`` (pool adjacent violators): a falling stretch
    becomes its mean. Not scipy's ``isotonic_regression``: its import costs a report most of a second."""
    blocks: list[tuple[float, int]] = []  # (mean, count) of each pooled stretch
    for v in values:
        blocks.append((v, 1))
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m1, n1), (m2, n2) = blocks.pop(-2), blocks.pop()
            blocks.append(((m1 * n1 + m2 * n2) / (n1 + n2), n1 + n2))
    return [m for m, n in blocks for _ in range(n)]


class PassCosts(BaseModel):
    """One model's cost, in seconds, of a forward pass over k tokens at a KV depth (llama-bench)."""

    model: str  # config name
    sha256: str | None = None
    ngl: int = 0
    decode_s: float  # one token decoded after another (llama-bench tg), per token
    pass_s: dict[int, float] = Field(default_factory=dict)  # k -> seconds for one pass over k tokens
    # k -> llama-bench's standard deviation of that pass, seconds (absent or 0: one repetition, or older)
    pass_sd: dict[int, float] = Field(default_factory=dict)

    def curve(self) -> dict[int, float]:
        """The measured passes, made non-decreasing in k: on a GPU a few tokens cost what one does,
        and the scatter of such a flat stretch must not read as a pass that gets cheaper."""
        ks = sorted(self.pass_s)
        return dict(zip(ks, pooled([self.pass_s[k] for k in ks]), strict=True))

    def cost(self, k: float) -> float:
        """Seconds for a pass over ``k`` tokens on ``curve``, linear between measured k's (and beyond)."""
        if k <= 1:
            return self.decode_s
        fitted = self.curve()
        pts = sorted(fitted.items())
        if not pts:
            return self.decode_s * k
        if k == int(k) and int(k) in fitted:  # a measured k (a mean draft length is a float)
            return fitted[int(k)]
        lo = [(x, y) for x, y in pts if x < k]
        hi = [(x, y) for x, y in pts if x > k]
        if lo and hi:
            (x0, y0), (x1, y1) = lo[-1], hi[0]
        elif len(pts) >= 2:
            (x0, y0), (x1, y1) = pts[-2], pts[-1]
        else:
            return pts[0][1] * k / pts[0][0]
        return y0 + (y1 - y0) * (k - x0) / (x1 - x0)

    def impossible(self, slack: float = NOISE_SLACK, z: float = NOISE_Z) -> str | None:
        """Why these costs cannot be right, or None: a pass that took no time, or a longer pass timed
        below a shorter one by more than their noise allows (a fall within it ``curve`` flattens)."""
        timed = [("a decode", self.decode_s)] + [
            (f"a pass over {k} tokens", s) for k, s in self.pass_s.items()
        ]
        for what, s in timed:
            if not (math.isfinite(s) and s > 0):
                return f"{self.model}: {what} took {s:.4g} s"
        pts = sorted(self.pass_s.items())
        for i, (k, s) in enumerate(pts):
            worst = None  # (fall beyond what is allowed, shorter k, its cost, allowed)
            for k0, s0 in pts[:i]:
                allowed = slack * s0 + z * math.hypot(self.pass_sd.get(k0, 0.0), self.pass_sd.get(k, 0.0))
                if s0 - s > allowed and (worst is None or s0 - s - allowed > worst[0]):
                    worst = (s0 - s - allowed, k0, s0, allowed)
            if worst is not None:
                _, k0, s0, allowed = worst
                return (
                    f"{self.model}: a pass over {k} tokens took {s:.4g} s, one over {k0} took "
                    f"{s0:.4g} s, a fall beyond the {allowed:.2g} s their noise allows"
                )
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
        """Where the calibration came from, when, at what KV depth (for a report)."""
        when = f" {self.measured_at[:16].replace('T', ' ')}" if self.measured_at else ""
        how = "from the calibration cache" if self.source == "cache" else "measured by specbench tune"
        return f"llama-bench{when} at KV depth {self.depth}, {how} (build {self.build})"

    def costs(self, model: str, ngl: int | None) -> PassCosts | None:
        return next((m for m in self.models if m.model == model and m.ngl == (ngl or 0)), None)


def save_calibration(run_dir: Path, calibration: Calibration) -> None:
    write_whole(run_dir / CALIBRATION, json_text(calibration, ensure_ascii=False))


def load_calibration(run_dir: Path) -> Calibration | None:
    """The run's calibration, or None when it has none (a plain `specbench run`) or it is unreadable."""
    path = run_dir / CALIBRATION
    try:
        return Calibration.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None

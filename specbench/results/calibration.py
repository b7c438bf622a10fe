"""What a calibration is: the measured cost of each forward pass a speculative step makes.

Written by ``specbench tune`` (``specbench.tune.calibrate``) into the run folder, read by the report
to compute ``model_speedup``. Records only: files are ``specbench.results.folder``'s business.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class PassCosts(BaseModel):
    """One model's cost, in seconds, of a forward pass over k tokens at a KV depth (llama-bench)."""

    model: str  # config name
    sha256: str | None = None
    ngl: int = 0
    decode_s: float  # one token decoded after another (llama-bench tg), per token
    pass_s: dict[int, float] = Field(default_factory=dict)  # k -> seconds for one pass over k tokens

    def cost(self, k: int) -> float:
        """Seconds for a pass over ``k`` tokens: measured, else linear between the measured k's
        (beyond the largest, extended with the slope of the last two)."""
        if k <= 1:
            return self.decode_s
        pts = sorted(self.pass_s.items())
        if not pts:
            return self.decode_s * k
        if k in self.pass_s:
            return self.pass_s[k]
        lo = [(x, y) for x, y in pts if x < k]
        hi = [(x, y) for x, y in pts if x > k]
        if lo and hi:
            (x0, y0), (x1, y1) = lo[-1], hi[0]
        elif len(pts) >= 2:
            (x0, y0), (x1, y1) = pts[-2], pts[-1]
        else:
            return pts[0][1] * k / pts[0][0]
        return y0 + (y1 - y0) * (k - x0) / (x1 - x0)


class Calibration(BaseModel):
    """Pass costs of every model of a tuned pair, measured on this machine with this build."""

    build: str  # BuildInfo.key
    threads: int | None = None
    depth: int  # tokens already in the KV cache when the passes were timed
    repetitions: int = 2
    models: list[PassCosts] = Field(default_factory=list)

    def costs(self, model: str, ngl: int | None) -> PassCosts | None:
        for m in self.models:
            if m.model == model and m.ngl == (ngl or 0):
                return m
        return None

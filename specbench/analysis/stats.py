"""The speedup model a report rests on (Leviathan et al.), pure functions over floats.

With per-token acceptance a, draft length g and cost ratio c (a draft step's time over a target
step's), Leviathan et al. 2023 (eq. 1, Thm. 3.8) predict (1 - a^(g+1)) / ((1 - a)(g*c + 1)).
Draft-free methods (n-gram lookup) have c = 0, so their prediction keeps growing with g. The model
assumes verifying g + 1 tokens costs one target step, which a CPU does not deliver: measured
speedups below it are expected (``specbench.analysis.speedmodel`` prices the passes as measured).
"""

from __future__ import annotations

import math

MAX_DRAFT = 64  # the largest draft length the best-g search considers


def expected_tokens_per_pass(a: float, g: int) -> float:
    """(1 - a^(g+1)) / (1 - a): tokens one target pass yields; g + 1 at a = 1."""
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"acceptance must be in [0, 1], got {a}")
    if g < 0:
        raise ValueError(f"draft length must be >= 0, got {g}")
    return math.fsum(a**i for i in range(g + 1))


def predicted_speedup(a: float, g: int, c: float) -> float:
    """Leviathan et al. 2023: (1 - a^(g+1)) / ((1 - a)(g c + 1)); c = 0 for draft-free methods."""
    if c < 0 or not math.isfinite(c):
        raise ValueError(f"cost ratio must be finite and >= 0, got {c}")
    return expected_tokens_per_pass(a, g) / (g * c + 1)


def best_draft_length(a: float, c: float, max_g: int = MAX_DRAFT) -> int | None:
    """The draft length in 1..max_g the model predicts fastest; None when it keeps improving up to
    max_g (free drafts, say): there is no best length then, only "longer", and no arbitrary cap."""
    if c == 0 and a > 0:
        return None  # free drafts: every extra token can only help
    speeds = [predicted_speedup(a, g, c) for g in range(1, max_g + 1)]
    best = max(range(len(speeds)), key=lambda i: speeds[i])  # first maximum: the shortest
    if best == len(speeds) - 1:
        return None
    return best + 1


def cost_ratio(target_tps: float | None, draft_tps: float | None) -> float | None:
    """c = draft time per token / target time per token = target t/s / draft t/s (alone each)."""
    if not target_tps or not draft_tps or target_tps <= 0 or draft_tps <= 0:
        return None
    return target_tps / draft_tps

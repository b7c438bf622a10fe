"""The speed models: Leviathan et al.'s from ratios, and the calibrated one from measured pass costs.

Leviathan et al. 2023 (eq. 1, Thm. 3.8): with per-token acceptance a, draft length g and cost ratio c
(a draft step's time over a target step's) the speedup is (1 - a^(g+1)) / ((1 - a)(g*c + 1)), which
assumes verifying g + 1 tokens costs one target step: a CPU does not deliver that. The calibrated
model prices a step of llama-speculative-simple as measured: T_step(g) = g·d + D(g+1) + T(g+1) + o·E
(the draft's decodes, its re-evaluation of the verified batch, the target's pass, the per-token
overhead o over E tokens), all from llama-bench on this machine, and the speedup is
E·(T(1) + o) / T_step(g). The derivation, and how p_min and draft_min enter: docs/tune.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from specbench.results.calibration import Calibration, PassCosts

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
    best = max(range(1, max_g + 1), key=lambda g: predicted_speedup(a, g, c))  # the first of equals: shortest
    return None if best == max_g else best


def cost_ratio(target_tps: float | None, draft_tps: float | None) -> float | None:
    """c = draft time per token / target time per token = target t/s / draft t/s (alone each)."""
    if not target_tps or not draft_tps or target_tps <= 0 or draft_tps <= 0:
        return None
    return target_tps / draft_tps


def expected_tokens(alpha: float, g: float) -> float:
    """Tokens per step with i.i.d. per-token acceptance ``alpha`` (geometric): (1 − α^(g+1)) / (1 − α)."""
    a = min(max(alpha, 0.0), 1.0)
    return float(g + 1) if a >= 1.0 else (1.0 - a ** (g + 1)) / (1.0 - a)


def alpha_for(tokens_per_step: float, g: float) -> float:
    """The per-token acceptance whose geometric model gives ``tokens_per_step`` at draft length g."""
    target = min(max(tokens_per_step, 1.0), g + 1.0)
    lo, hi = 0.0, 1.0
    for _ in range(60):  # expected_tokens is increasing in alpha
        mid = (lo + hi) / 2
        if expected_tokens(mid, g) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def fit_alpha(points: Sequence[tuple[float, float]]) -> float | None:
    """One α for a pair from measured (draft length, tokens per step) points, weighting each by g."""
    usable = [(g, e) for g, e in points if g and g > 0 and e is not None]
    if not usable:
        return None
    return sum(g * alpha_for(e, g) for g, e in usable) / sum(g for g, _ in usable)


def drafted_per_pass(tokens: float | None, acceptance: float | None, g: int, p_min: float | None) -> float:
    """Drafts the target verified per pass. Only p_min cuts a draft short, so g when p_min is 0;
    else (E − 1) / acceptance, since a pass accepts that share of its drafts (g when not measurable:
    no acceptance yet)."""
    if not p_min or tokens is None or not acceptance or acceptance <= 0:
        return float(g)
    return min(max((tokens - 1.0) / acceptance, 0.0), float(g))


@dataclass(frozen=True)
class Drafting:
    """How one (draft_min, p_min) setting drafts, fitted to its measured cells: the per-token
    acceptance α and, with p_min > 0, the chance ``keep`` that the draft stays above p_min for one more
    token (a draft of length g then holds (1 − keep^g) / (1 − keep) tokens on average)."""

    alpha: float
    keep: float = 1.0

    def drafted(self, g: int) -> float:
        return float(g) if self.keep >= 1.0 else expected_tokens(self.keep, g - 1)

    def tokens(self, g: int) -> float:
        return expected_tokens(self.alpha, self.drafted(g))


def fit_drafting(points: Sequence[tuple[int, float, float]]) -> Drafting | None:
    """From measured (draft_max, tokens per step, drafts verified per step) of one (draft_min, p_min)."""
    usable = [(g, e, k) for g, e, k in points if g and g > 0 and e is not None]
    alpha = fit_alpha([(k, e) for _, e, k in usable if k > 0])
    if alpha is None:
        return None
    cut = [(g, k) for g, _, k in usable if g >= 2 and k < g]
    if not cut:
        return Drafting(alpha)
    whole = sum(g for g, _, k in usable if g >= 2 and k >= g)  # full drafts vote for keep = 1
    keep = (sum(g * alpha_for(k, g - 1) for g, k in cut) + whole) / (sum(g for g, _ in cut) + whole)
    return Drafting(alpha, keep)


def token_overhead(target: PassCosts, baseline_tps: float | None) -> float:
    """Seconds per token spent outside the forward pass (sampling, detokenizing, printing)."""
    if not baseline_tps:
        return 0.0
    return max(0.0, 1.0 / baseline_tps - target.decode_s)


@dataclass(frozen=True)
class Step:
    """Where a step's time goes, in seconds."""

    draft_s: float  # g decodes + the re-evaluation pass over g+1 tokens
    verify_s: float  # the target's pass over g+1 tokens
    overhead_s: float
    tokens: float  # expected tokens per step

    @property
    def total_s(self) -> float:
        return self.draft_s + self.verify_s + self.overhead_s


def step(target: PassCosts, draft: PassCosts, g: float, tokens: float, overhead: float) -> Step:
    return Step(
        draft_s=g * draft.decode_s + draft.cost(g + 1),
        verify_s=target.cost(g + 1),
        overhead_s=overhead * tokens,
        tokens=tokens,
    )


def model_speedup(
    target: PassCosts, draft: PassCosts, g: float, tokens: float, baseline_tps: float | None = None
) -> float:
    """Predicted speculative t/s over baseline t/s for g drafts per step and ``tokens`` per step."""
    o = token_overhead(target, baseline_tps)
    return tokens * (target.decode_s + o) / step(target, draft, g, tokens, o).total_s


def cell_model_speedup(
    cal: Calibration | None,
    target: str,
    ngl: int | None,
    draft: str | None,
    ngld: int | None,
    g: int | None,
    tokens: float | None,
    baseline_tps: float | None,
    drafted: float | None = None,
) -> float | None:
    """``model_speedup`` of a report row: None without a calibration of both models or a measured g.
    ``drafted``: drafts verified per step when p_min cuts drafts short (else g)."""
    if cal is None or draft is None or not g or tokens is None:
        return None
    t, d = cal.costs(target, ngl), cal.costs(draft, ngld)
    if t is None or d is None:
        return None
    return model_speedup(t, d, drafted if drafted is not None else g, tokens, baseline_tps)


def diagnose(target: PassCosts, draft: PassCosts, g: float, tokens: float, baseline_tps: float | None) -> str:
    """Why speculation does not pay here: the factor whose removal would help the step most."""
    o = token_overhead(target, baseline_tps)
    s = step(target, draft, g, tokens, o)
    ratio = draft.decode_s / target.decode_s if target.decode_s > 0 else float("nan")
    gains = {
        "draft": s.draft_s,  # time a free draft would save
        "verify": s.verify_s - target.decode_s,  # time verification costs beyond one decode
        "acceptance": s.total_s * (1 - tokens / (g + 1)),  # time per step lost to rejected drafts
    }
    cause = max(gains, key=lambda k: gains[k])
    if cause == "draft":
        return (
            f"the draft's cost is close to the target's: a draft decode takes {ratio:.0%} of a target "
            f"decode, and drafting {g:.3g} tokens takes {s.draft_s * 1e3:.1f} ms "
            f"of a {s.total_s * 1e3:.1f} ms step"
        )
    if cause == "verify":
        return (
            f"verification cost: the target's pass over {g + 1:.3g} tokens takes {s.verify_s * 1e3:.1f} ms, "
            f"{s.verify_s / target.decode_s:.1f}x a single-token decode ({target.decode_s * 1e3:.1f} ms)"
        )
    return (
        f"low acceptance: {tokens:.2f} tokens per step of a possible {g + 1:.3g} "
        f"(per-token acceptance {alpha_for(tokens, g):.0%})"
    )


def curve_speedup(points: Sequence[tuple[float, float]], length: float) -> float | None:
    """The speedup a measured synthetic curve (``--spec-synth-len``: this machine's speedup against
    acceptance length alone) gives at ``length``: linear between the two nearest points; None
    outside the measured range (no extrapolation)."""
    pts = sorted(points)
    if not pts or length < pts[0][0] or length > pts[-1][0]:
        return None
    for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
        if x0 <= length <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (length - x0) / (x1 - x0)
    return pts[0][1]  # a single point, exactly at it

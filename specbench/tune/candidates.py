"""What tune can set, and what the calibrated speed model expects of each setting.

Every (draft_min, p_min) of the config drafts its own way, so each gets its own fit of per-token
acceptance (and, with p_min > 0, of how soon drafts stop) from its measured cells.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from specbench.analysis.cells import ReportRow
from specbench.analysis.speedmodel import drafted_per_pass, fit_drafting, model_speedup
from specbench.base.llamaopts import METHOD
from specbench.plan.config import Config
from specbench.results.calibration import Calibration

SPREAD = 1.3  # first-round candidates' draft_max differ at least by this factor


@dataclass(frozen=True)
class Setting:
    draft_max: int
    draft_min: int
    p_min: float
    ngl: int
    ngld: int
    method: str = "draft"

    def key(self) -> tuple:
        return (self.draft_max, self.draft_min, self.p_min, self.ngl, self.ngld)

    @classmethod
    def of(cls, m: Any) -> Setting:
        """The setting of a planned invocation or a report row (an axis at None reads as 0)."""
        return cls(
            **{f.name: getattr(m, f.name) or 0 for f in fields(cls) if f.name != METHOD.key}, method=m.method
        )

    def label(self, ngld: bool = False) -> str:
        """``draft_max 8``, with draft_min, p_min (and ngld) only where they are not 0."""
        parts = [f"draft_max {self.draft_max}"]
        parts += [f"draft_min {self.draft_min}"] if self.draft_min else []
        parts += [f"p_min {self.p_min:g}"] if self.p_min else []
        parts += [f"ngld {self.ngld}"] if ngld else []
        return " ".join(parts)


@dataclass
class Candidate:
    setting: Setting
    model_speedup: float | None = None
    speedup: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    n: int = 0  # valid speculative samples measured
    repetitions: int = 0  # repetitions behind the speedup's interval (1: none, as the report's n=1)
    tokens: float | None = None  # the model's tokens per step (measured where measured)
    drafted: float | None = None  # the model's drafts verified per step (g unless p_min cuts drafts)


def candidates(base: Config, ngl: int, ngld_values: list[int], max_draft: int) -> list[Setting]:
    """draft_max 1..max_draft for every (draft_min, p_min) of the config (draft_min <= draft_max)."""
    pairs = [(dm, pm) for dm in dict.fromkeys(base.sweep.draft_min) for pm in dict.fromkeys(base.sweep.p_min)]
    return [Setting(g, dm, pm, ngl, nd) for nd in ngld_values for dm, pm in pairs
            for g in range(max(1, dm), max_draft + 1)]  # fmt: skip


def predict(cands: dict, rows: dict, cal: Calibration, target_name: str, draft_name: str, ngl: int,
            baseline_tps: float | None) -> None:  # fmt: skip
    """Each candidate's ``model_speedup`` (and its measured speedup, where measured). A (draft_min,
    p_min) with no measured cell yet borrows the fit pooled over all (as if drafts were never cut)."""
    points: dict[tuple, list[tuple[int, float, float]]] = {}
    for r in rows.values():
        if r.tokens_per_pass is not None:
            points.setdefault((r.draft_min or 0, r.p_min or 0.0), []).append(
                (r.draft_max, r.tokens_per_pass, _drafted(r))
            )
    shapes = {family: fit_drafting(pts) for family, pts in points.items()}
    pooled = fit_drafting([(r.draft_max, r.tokens_per_pass, float(r.draft_max)) for r in rows.values()
                           if r.tokens_per_pass is not None])  # fmt: skip
    target = cal.costs(target_name, ngl)
    for key, c in cands.items():
        st, row = c.setting, rows.get(key)
        shape = shapes.get((st.draft_min, st.p_min)) or pooled
        if row is not None and row.tokens_per_pass:
            c.tokens, c.drafted = row.tokens_per_pass, _drafted(row)
        elif shape is not None:
            c.tokens, c.drafted = shape.tokens(st.draft_max), shape.drafted(st.draft_max)
        draft = cal.costs(draft_name, st.ngld)
        if c.tokens is not None and c.drafted is not None and target and draft:
            c.model_speedup = model_speedup(target, draft, c.drafted, c.tokens, baseline_tps)
        if row is not None:
            c.speedup, c.speedup_ci_low, c.speedup_ci_high = (row.speedup, row.speedup_ci_low,
                                                              row.speedup_ci_high)  # fmt: skip
            c.n, c.repetitions = row.n, row.speedup_repetitions


def _drafted(r: ReportRow) -> float:
    return drafted_per_pass(r.tokens_per_pass, r.acceptance, r.draft_max, r.p_min)


def first_round(ranked: list[Setting], measured: set[tuple], k: int) -> list[Setting]:
    """The model's best ``k`` unmeasured settings, each draft_max at least SPREAD apart from those
    chosen or measured at its ngld, except the model's best, which is always taken: neighbours
    like 11, 12, 13 differ less than one repetition's noise, so measuring them all tells nothing."""
    taken: list[Setting] = []
    near = [s for s in ranked if s.key() in measured]
    for s in ranked:
        if len(taken) >= k:
            break
        if s.key() in measured:
            continue
        close = any(
            o.ngld == s.ngld and max(o.draft_max, s.draft_max) < SPREAD * min(o.draft_max, s.draft_max)
            for o in near + taken
        )
        if taken and close:
            continue
        taken.append(s)
    return taken

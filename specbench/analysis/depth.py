"""Speculation at depth: each setting's speedup and acceptance against the context's depth, with
their intervals, and the break-even depth where the speedup's interval crosses 1.0.

A setting is a report row's cell less its depth; a depth the plan left out (a draft whose context
cannot hold it: ``results.cell.LeftOut``) is a point of its own, *not run*, never a measurement.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from specbench.analysis.cells import ALL, ROW_CELL, NotRun, ReportRow
from specbench.base.llamaopts import METHOD
from specbench.results.cell import group_by

SETTING_KEYS = tuple(k for k in ("run", *ROW_CELL) if k != "depth")


class DepthPoint(BaseModel):
    """One depth of a setting: its report row's figures, or why the plan left it out."""

    depth: int
    speedup: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    acceptance: float | None = None
    acceptance_ci_low: float | None = None
    acceptance_ci_high: float | None = None
    n: int = 0
    not_run: str | None = None  # why the plan left this depth out (its LeftOut's reason)

    @property
    def verdict(self) -> str:
        """pays | loses | even | unmeasured (no interval: fewer than two repetitions) | not run."""
        if self.not_run is not None:
            return "not run"
        lo, hi = self.speedup_ci_low, self.speedup_ci_high
        if lo is None or hi is None:
            return "unmeasured"
        return "pays" if lo > 1.0 else "loses" if hi < 1.0 else "even"


class DepthCurve(BaseModel):
    setting: dict[str, object]  # the axes the points share (the row's cell, less depth)
    points: list[DepthPoint]  # by depth

    @property
    def break_even(self) -> str:
        """Where the speedup's interval crosses 1.0, in words (over the depths measured; the ones
        left out are said after it)."""
        unrun = "".join(f"; not run at depth {p.depth} ({p.not_run.split(':', 1)[0]})"
                        for p in self.points if p.not_run is not None)  # fmt: skip
        return self._crossing([p for p in self.points if p.not_run is None]) + unrun

    @staticmethod
    def _crossing(points: list[DepthPoint]) -> str:
        verdicts = [p.verdict for p in points]
        if "pays" not in verdicts:
            return "never pays at the depths measured"
        if all(v == "pays" for v in verdicts):
            return "pays at every depth measured"
        last = max(i for i, v in enumerate(verdicts) if v == "pays")
        if last == len(verdicts) - 1:  # paid again at the deepest: no single crossing
            return f"pays at depth {points[last].depth}, the deepest measured (not at every depth)"
        after = points[last + 1]
        said = "its interval holds 1.0" if after.verdict == "even" else f"it {after.verdict}"
        return f"break-even between depth {points[last].depth} (pays) and {after.depth} ({said})"


def depth_curves(rows: list[ReportRow], not_run: Sequence[NotRun] = ()) -> list[DepthCurve]:
    """One curve per setting that was measured at more than one depth, or measured at one and left
    out at another (``not_run``: a point of its own); overall rows, no synthetic cells, in the rows'
    order."""
    measured = [r for r in rows if r.category == ALL and not r.synthetic]
    groups = group_by(measured, lambda r: tuple(getattr(r, k) for k in SETTING_KEYS))
    unrun = group_by(not_run, lambda lo: tuple(lo.axis(k) for k in SETTING_KEYS))
    curves = []
    for key, members in groups.items():
        left = [lo for lo in unrun.get(key, []) if lo.cell.depth not in {r.depth for r in members}]
        if len({r.depth for r in members} | {lo.cell.depth for lo in left}) < 2:
            continue
        points = [DepthPoint.model_validate(r, from_attributes=True) for r in members]
        points += [DepthPoint(depth=lo.cell.depth, not_run=lo.reason) for lo in left]
        points.sort(key=lambda p: p.depth)
        curves.append(DepthCurve(setting=dict(zip(SETTING_KEYS, key, strict=True)), points=points))
    return curves


def setting_label(curve: DepthCurve, curves: list[DepthCurve]) -> str:
    """The setting named by what differs between the curves (the pair and method always)."""
    varying = [k for k in SETTING_KEYS if len({str(c.setting[k]) for c in curves}) > 1]
    shown = [k for k in SETTING_KEYS if k in ("pair", METHOD.key) or k in varying]
    return " ".join(f"{k}={curve.setting[k]}" if k not in ("pair", METHOD.key) else str(curve.setting[k])
                    for k in shown if curve.setting[k] is not None)  # fmt: skip


def _interval(value: float | None, lo: float | None, hi: float | None, fmt: str) -> str:
    if value is None:
        return "-"
    if lo is None or hi is None:
        return format(value, fmt)
    return f"{format(value, fmt)} [{format(lo, fmt)}, {format(hi, fmt)}]"


def markdown_lines(curves: list[DepthCurve]) -> list[str]:
    """report.md's section: a table per setting and its break-even line."""
    if not curves:
        return []
    out = ["### Speculation at depth", ""]
    for c in curves:
        out += [f"**{setting_label(c, curves)}**: {c.break_even}.", ""]
        out += ["| depth | speedup [95% CI] | acceptance [95% CI] | n |", "| ---: | ---: | ---: | ---: |"]
        for p in c.points:
            if p.not_run is not None:
                out.append(f"| {p.depth} | not run: {p.not_run.split(':', 1)[0]} (see the notes) | - | 0 |")
                continue
            acc = _interval(p.acceptance, p.acceptance_ci_low, p.acceptance_ci_high, ".1%")
            speed = _interval(p.speedup, p.speedup_ci_low, p.speedup_ci_high, ".3f")
            out.append(f"| {p.depth} | {speed} | {acc} | {p.n} |")
        out.append("")
    return out

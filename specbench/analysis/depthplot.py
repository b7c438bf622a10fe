"""The figure of speculation at depth: speedup and acceptance against the context's depth, with
their 95% intervals, one series per setting (``specbench.analysis.depth``)."""

from __future__ import annotations

from pathlib import Path

from specbench.analysis.depth import DepthCurve, depth_curves, setting_label
from specbench.analysis.plots import _plt, _save, error_bars, legend_below, style
from specbench.analysis.report import Report

DEPTH = "speedup_vs_depth.png"
TITLES = {DEPTH: "Speedup and acceptance vs depth"}


def _nan(values: list[float | None]) -> list[float]:
    """A missing value as NaN: matplotlib leaves the point out."""
    return [v if v is not None else float("nan") for v in values]


def speedup_vs_depth(report: Report, path: Path, curves: list[DepthCurve] | None = None) -> Path | None:
    """Only when a setting was measured at two depths or more."""
    curves = depth_curves(report.rows, report.not_run) if curves is None else curves
    if not curves:
        return None
    plt = _plt()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7.2), sharex=True)
    for i, c in enumerate(curves):
        ls, marker = style(i)
        xs = [p.depth for p in c.points]
        name = f"{setting_label(c, curves)}: {c.break_even}"
        s = [p.speedup for p in c.points]
        top.errorbar(xs, _nan(s), yerr=error_bars(s, [p.speedup_ci_low for p in c.points],
                     [p.speedup_ci_high for p in c.points]), ls=ls, marker=marker, capsize=3)  # fmt: skip
        a = [100 * p.acceptance if p.acceptance is not None else None for p in c.points]
        lo = [100 * p.acceptance_ci_low if p.acceptance_ci_low is not None else None for p in c.points]
        hi = [100 * p.acceptance_ci_high if p.acceptance_ci_high is not None else None for p in c.points]
        bottom.errorbar(xs, _nan(a), yerr=error_bars(a, lo, hi), ls=ls, marker=marker, capsize=3, label=name)
    top.axhline(1.0, color="black", lw=1, ls="--")
    top.set_ylabel("speedup (95% CI)")
    top.set_title(TITLES[DEPTH])
    bottom.set_ylabel("acceptance % (95% CI)")
    bottom.set_xlabel("depth (tokens of context before the prompt)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    fig.set_size_inches(fig.get_figwidth(), 6.6 + 0.17 * legend_below(bottom, fontsize=7))
    return _save(fig, path, report)


def depth_plots(report: Report, out_dir: Path) -> list[Path]:
    made = speedup_vs_depth(report, out_dir / DEPTH)
    return [made] if made is not None else []

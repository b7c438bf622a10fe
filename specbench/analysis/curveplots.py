"""The report's curves beyond the sweep's axes: the machine's speedup against acceptance length,
acceptance by draft position, and speedup and acceptance against the context's depth.

Synthetic cells (``synth_len``: drafts accepted at random) trace what this machine gains at each
acceptance length; a real cell placed on its curve shows what its draft's pattern of acceptance
costs or gives beyond its mean.
"""

from __future__ import annotations

from pathlib import Path

from specbench.analysis.cells import ALL, ReportRow, step_len
from specbench.analysis.depth import DepthCurve, depth_curves, setting_label
from specbench.analysis.plots import (
    CELL_KEYS,
    SPEED,
    _cell_label,
    _groups,
    _plt,
    _save,
    error_bars,
    legend_below,
    make_plots,
    speed_plot,
    style,
)
from specbench.analysis.report import Report
from specbench.results.cell import SYNTH_FIELDS

CURVE = "speedup_vs_accept_len.png"
BY_POS = "acceptance_by_position.png"
TITLES = {CURVE: "Speedup vs acceptance length", BY_POS: "Acceptance by draft position"}
_CURVE_KEYS = tuple(k for k in CELL_KEYS if k not in SYNTH_FIELDS)


def _color(plt, i: int):
    """Up to 20 series apart (tab20), then again from the first."""
    return plt.get_cmap("tab20")(i % 20)


def speedup_vs_accept_len(report: Report, path: Path) -> Path | None:
    """Only when the report has synthetic cells: one curve per setting (x = acceptance length
    counted by the server, else tokens per pass), its real cells as points in the same colour;
    settings without a curve (draft-free methods) are left out."""
    plt = _plt()
    rows = [r for r in report.rows if r.category == ALL and r.speedup is not None and step_len(r) is not None]
    if not any(r.synthetic for r in rows):
        return None
    label = _cell_label(rows, _CURVE_KEYS)
    fig, ax = plt.subplots(figsize=(8, 5.4))
    for i, (name, series) in enumerate(_groups(rows, label).items()):
        color = _color(plt, i)
        synth = sorted((r for r in series if r.synthetic), key=lambda r: step_len(r) or 0)
        if not synth:
            continue  # a setting without a curve (a draft-free method): nothing to place it on
        xs, ys = [step_len(r) for r in synth], [r.speedup for r in synth]
        ls, marker = style(i)
        ax.plot(xs, ys, marker=marker, ls=ls, ms=4, color=color, label=f"{name} (synthetic)")
        real = [r for r in series if not r.synthetic]
        if real:
            ax.scatter([step_len(r) for r in real], [r.speedup for r in real], marker="*", s=140, color=color,
                       edgecolors="black", zorder=3, label=f"{name} (real)")  # fmt: skip
    ax.axhline(1.0, color="black", lw=1, ls="--", label="baseline (1.0x)")
    ax.set_xlabel("acceptance length (tokens per verification step, target's own included)")
    ax.set_ylabel("speedup (speculative t/s / baseline t/s)")
    ax.set_title(TITLES[CURVE] + " (synthetic: the machine's curve)")
    ax.grid(alpha=0.3)
    fig.set_size_inches(fig.get_figwidth(), 4.2 + 0.17 * legend_below(ax, fontsize=7))
    return _save(fig, path, report)


def acceptance_by_position(report: Report, path: Path) -> Path | None:
    """Per cell with server counters: the share of verification steps that accepted the draft's
    token at each position (synthetic cells paler; each cell its own line style and marker)."""
    plt = _plt()
    rows: list[ReportRow] = [r for r in report.rows if r.category == ALL and r.accept_by_pos]
    if not rows:
        return None
    label = _cell_label(rows)
    fig, ax = plt.subplots(figsize=(8, 5.4))
    for i, r in enumerate(rows):
        rates = r.accept_by_pos or []
        name = label(r) + (" (synthetic)" if r.synthetic else "")
        xs, ys = range(1, len(rates) + 1), [100 * x for x in rates]
        ls, marker = style(i)
        ax.plot(xs, ys, marker=marker, ms=4, color=_color(plt, i), ls=ls, alpha=0.6 if r.synthetic else 1.0,
                label=name)  # fmt: skip
    ax.set_ylim(0, 105)
    ax.set_xlabel("draft position (1 = the first drafted token)")
    ax.set_ylabel("accepted (% of verification steps)")
    ax.set_title(TITLES[BY_POS])
    ax.grid(alpha=0.3)
    fig.set_size_inches(fig.get_figwidth(), 4.2 + 0.17 * legend_below(ax, fontsize=7))
    return _save(fig, path, report)


DEPTH = "speedup_vs_depth.png"
DEPTH_TITLES = {DEPTH: "Speedup and acceptance vs depth"}


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
    top.set_title(DEPTH_TITLES[DEPTH])
    bottom.set_ylabel("acceptance % (95% CI)")
    bottom.set_xlabel("depth (tokens of context before the prompt)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    fig.set_size_inches(fig.get_figwidth(), 6.6 + 0.17 * legend_below(bottom, fontsize=7))
    return _save(fig, path, report)


def report_plots(report: Report, out_dir: Path) -> list[Path]:
    """Every figure that applies to the report, written into out_dir: the sweep's (``make_plots``),
    the acceptance-length curves, the machine's speed and speculation at depth."""
    made = make_plots(report, out_dir)  # makes out_dir
    more = [
        speedup_vs_accept_len(report, out_dir / CURVE),
        acceptance_by_position(report, out_dir / BY_POS),
        speed_plot(report, out_dir / SPEED),
        speedup_vs_depth(report, out_dir / DEPTH),
    ]
    return made + [p for p in more if p is not None]

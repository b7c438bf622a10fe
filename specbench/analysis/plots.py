"""The report's figures: PNGs a person can read at a glance, each captioned with where it ran: the
sweep's axes, then the curves beyond them (the machine's speedup against acceptance length,
acceptance by draft position, speedup and acceptance against the context's depth).

Synthetic cells (``synth_len``: drafts accepted at random) trace what this machine gains at each
acceptance length; a real cell placed on its curve shows what its draft's pattern of acceptance
costs or gives beyond its mean. matplotlib (Agg, no display) is imported inside functions so that
the CLI starts fast.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from specbench.analysis.cells import ALL, ROW_CELL, ROW_NAMES, ReportRow, step_len
from specbench.analysis.depth import DepthCurve, depth_curves, setting_label
from specbench.analysis.quality import DEFAULT_PRECISION
from specbench.analysis.report import Report
from specbench.base.llamaopts import DRAFT_LENGTH, GPU_LAYERS, METHOD
from specbench.results.cell import BASELINE_FIELDS, SYNTH_FIELDS, group_by

SPEEDUP = "speedup_vs_draft.png"
TPS_BARS = "tps_by_cell.png"
ACCEPTANCE = "acceptance_vs_draft.png"
CATEGORY = "speedup_by_category.png"
NGL = "tps_vs_ngl.png"
CURVE = "speedup_vs_accept_len.png"
BY_POS = "acceptance_by_position.png"
SPEED = "machine_speed.png"
DEPTH = "speedup_vs_depth.png"
TITLES = {
    SPEEDUP: "Speedup vs draft length",
    TPS_BARS: "Baseline vs speculative throughput",
    ACCEPTANCE: "Acceptance vs draft length",
    CATEGORY: "Speedup by prompt category",
    NGL: "Throughput vs GPU layers",
}
DEPTH_TITLES = {DEPTH: "Speedup and acceptance vs depth"}
# what tells one cell from another, in label order (labels name only the keys that vary)
CELL_KEYS = ("run", *(k for k in ROW_CELL if k not in ("target", "draft")))
SERIES_KEYS = tuple(k for k in CELL_KEYS if k not in ("pair", DRAFT_LENGTH.key))  # a panel a pair, x: g
_CURVE_KEYS = tuple(k for k in CELL_KEYS if k not in SYNTH_FIELDS)  # a curve: a cell less its synth_len


def pyplot():
    """matplotlib.pyplot on Agg (no display), imported at the first figure, not at the CLI's start."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _labeller(rows: list[ReportRow], keys: tuple[str, ...], always: tuple[str, ...] = ()) -> Callable:
    """A label naming only what differs between the rows (plus ``always``)."""
    shown = [k for k in keys if k in always or len({getattr(r, k) for r in rows} - {None}) > 1]

    def label(r: ReportRow) -> str:
        values = [(k, v) for k in shown if (v := getattr(r, k)) is not None]
        return (
            ", ".join(str(v) if k in ("run", METHOD.key, "pair") else f"{k}={v}" for k, v in values)
            or r.method
        )

    return label


def _save(fig, path: Path, report: Report) -> Path:
    """Caption, lay out and write: the saved image grows to hold every legend and label placed
    outside the axes (``bbox_inches="tight"``), so none is clipped however long."""
    caption = "\n".join(i.caption() for i in report.runs)
    fig.text(0.01, 0.01, caption, fontsize=8, color="#444444", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.04 + 0.03 * len(report.runs), 1, 1))
    fig.savefig(path, dpi=110, bbox_inches="tight", pad_inches=0.15)
    pyplot().close(fig)
    return path


# Series are told apart by line style and marker as well as colour (a grey print, a colour-blind
# reader): the draft-length lines take these in order, the level lines of n-gram methods the next ones.
STYLES: tuple[tuple[object, str], ...] = (
    ("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ((0, (5, 1)), "v"), ((0, (3, 1, 1, 1)), "P"),
    ((0, (1, 1)), "X"), ((0, (5, 2, 1, 2, 1, 2)), "*"),
)  # fmt: skip
LEVEL_STYLES: tuple[tuple[object, str], ...] = (
    ("-.", "d"), ((0, (4, 2, 1, 2)), "h"), ((0, (1, 2)), "p"), ("--", "<"), ((0, (6, 2)), ">"), (":", "8"),
)  # fmt: skip


def style(i: int, styles: tuple[tuple[object, str], ...] = STYLES) -> tuple[object, str]:
    """The (line style, marker) of series ``i``; past the table's end they repeat."""
    return styles[i % len(styles)]


def legend_below(ax, fontsize: int = 8, below_pt: float = 40) -> int:
    """The legend under the axes and their x label (``below_pt`` points under the axes), off the
    data: one column when labels are long, else two. Returns its rows, for the figure's height."""
    from matplotlib.transforms import offset_copy

    labels = ax.get_legend_handles_labels()[1]
    ncol = 1 if max((len(x) for x in labels), default=0) > 42 or len(labels) < 3 else 2
    below = offset_copy(ax.transAxes, fig=ax.figure, y=-below_pt, units="points")  # past ticks and x label
    ax.legend(fontsize=fontsize, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=below,
              ncol=ncol, frameon=False)  # fmt: skip
    return -(-len(labels) // ncol)


def error_bars(
    values: list[float | None], lows: list[float | None], highs: list[float | None]
) -> list[list[float]]:
    """Asymmetric error bars below and above each value; 0 where a point has no interval."""
    below = [v - lo if v is not None and lo is not None else 0.0 for v, lo in zip(values, lows, strict=True)]
    above = [hi - v if v is not None and hi is not None else 0.0 for v, hi in zip(values, highs, strict=True)]
    return [below, above]


def _err(rows: list[ReportRow]) -> list[list[float]]:
    """Error bars from the speedup CI; 0 where there is none (one repetition)."""
    lows, highs = [r.speedup_ci_low for r in rows], [r.speedup_ci_high for r in rows]
    return error_bars([r.speedup for r in rows], lows, highs)


def _flat(ax, rows: list[ReportRow], metric: str, label: Callable, first_color: int) -> None:
    """Settings without a draft length (n-gram methods use llama.cpp's own): a level line across the
    panel and its band, each line with its own style and a marker of its own (staggered along it)."""
    for i, r in enumerate(rows):
        color = f"C{first_color + i}"
        ls, marker = style(i, LEVEL_STYLES)
        value = getattr(r, metric)  # the rows have it (_by_draft keeps only those)
        y = value if metric == "speedup" else 100 * value
        at = 0.06 + (0.88 * (i + 0.5) / len(rows))  # the marker's place along the line (axes fraction)
        ax.plot([0, at, 1], [y, y, y], transform=ax.get_yaxis_transform(), color=color, lw=1.5, ls=ls,
                marker=marker, markevery=[1], ms=7, label=f"{label(r)} (no draft length)")  # fmt: skip
        if metric == "speedup" and r.speedup_ci_low is not None:
            ax.axhspan(r.speedup_ci_low, r.speedup_ci_high, color=color, alpha=0.12)


def _speedup_limits(ax, rows: list[ReportRow]) -> None:
    """Keep the points readable: very wide intervals run off the axes instead of squashing them."""
    points = [1.0] + [r.speedup for r in rows if r.speedup is not None]
    points += [r.predicted_speedup for r in rows if r.predicted_speedup]
    lows = [r.speedup_ci_low for r in rows if r.speedup_ci_low is not None]
    highs = [r.speedup_ci_high for r in rows if r.speedup_ci_high is not None]
    low = max(min(points + lows), min(points) * 0.5, 0.0)
    high = min(max(points + highs), max(points) * 1.6)
    pad = 0.05 * (high - low)
    ax.set_ylim(low - pad, high + pad)


def _by_draft(report: Report, path: Path, metric: str) -> Path | None:
    """One panel per pair; x = draft length; one line per setting that differs otherwise."""
    plt = pyplot()
    # synthetic cells are left to the acceptance-length curve
    rows = [
        r for r in report.rows if r.category == ALL and getattr(r, metric) is not None and not r.synthetic
    ]
    if not rows:
        return None
    pairs = group_by(rows, lambda r: r.pair or r.target)
    fig, axes = plt.subplots(1, len(pairs), figsize=(6.4 * len(pairs), 5.6), squeeze=False)
    rows_below = 0  # the most legend rows under a panel
    for ax, (pair, prs) in zip(axes[0], pairs.items(), strict=True):
        label = _labeller(prs, SERIES_KEYS, always=(METHOD.key,))
        lined = group_by([r for r in prs if r.draft_max is not None], label)
        no_interval: set[str] = set()  # repetition counts of points drawn without an interval
        for i, (name, series) in enumerate(lined.items()):
            series.sort(key=lambda r: r.draft_max)
            dodge = 1.05 ** (i - (len(lined) - 1) / 2)  # series side by side, not on top of each other
            xs = [r.draft_max * dodge for r in series]
            color, (ls, marker) = f"C{i}", style(i)
            if metric == "speedup":
                ax.errorbar(
                    xs, [r.speedup for r in series], yerr=_err(series), marker=marker, ls=ls, capsize=4,
                    color=color, label=name,
                )  # fmt: skip
                # one repetition has no interval (analysis.figures): a hollow marker, named once below
                alone = [(x, r) for x, r in zip(xs, series, strict=True) if r.speedup_ci_low is None]
                if alone:
                    no_interval |= {str(r.speedup_repetitions) for _, r in alone}
                    ax.plot([x for x, _ in alone], [r.speedup for _, r in alone], ls="none", marker=marker,
                            ms=9, mfc="white", mec=color, mew=1.5, zorder=3)  # fmt: skip
                pred = [(r.draft_max * dodge, r.predicted_speedup) for r in series if r.predicted_speedup]
                if pred:
                    ax.plot(*zip(*pred, strict=True), ls=":", marker="x", color=color, alpha=0.7)
            else:
                ys = [100 * getattr(r, metric) for r in series]  # the rows have it (kept above)
                ax.plot(xs, ys, marker=marker, ls=ls, color=color, label=name)
        _flat(ax, [r for r in prs if r.draft_max is None], metric, label, len(lined))
        if metric == "speedup":
            _speedup_limits(ax, prs)
            if no_interval:  # one note in the legend, not a label on every such point
                counts = ", ".join(sorted(no_interval, key=int))
                ax.plot([], [], ls="none", marker="o", mfc="white", mec="gray", mew=1.5,
                        label=f"hollow: n={counts}, no interval")  # fmt: skip
            if any(r.predicted_speedup for r in prs if r.draft_max is not None):
                ax.plot([], [], ls=":", marker="x", color="gray", label="predicted (Leviathan model)")
            ax.axhline(1.0, color="black", lw=1, ls="--", label="baseline (1.0x)")
            ax.set_ylabel("speedup (speculative t/s / baseline t/s)")
        else:
            ax.set_ylim(0, 105)
            ax.set_ylabel("acceptance (% of drafted tokens accepted)")
        ticks = sorted({r.draft_max for r in prs if r.draft_max is not None})
        if ticks:
            ax.set_xscale("log", base=2)
            ax.set_xticks(ticks, [str(t) for t in ticks])
            ax.set_xlim(ticks[0] / 1.3, ticks[-1] * 1.3)
            ax.minorticks_off()
            ax.set_xlabel("draft length (draft_max, tokens)")
        else:
            ax.set_xticks([])
            ax.set_xlabel("(no draft length: llama.cpp's own n-gram settings)")
        ax.set_title(f"{TITLES[SPEEDUP if metric == 'speedup' else ACCEPTANCE]}: {pair}")
        ax.grid(alpha=0.3)
        rows_below = max(rows_below, legend_below(ax))
    fig.set_size_inches(fig.get_figwidth(), 4.2 + 0.19 * rows_below)  # the plot keeps its height
    return _save(fig, path, report)


def _cell_label(rows: list[ReportRow], keys: tuple[str, ...] = CELL_KEYS) -> Callable:
    return _labeller(rows, keys, always=("pair", DRAFT_LENGTH.key))


def tps_bars(report: Report, path: Path) -> Path | None:
    """Per cell, the baseline and speculative mean t/s side by side with +-1 sd."""
    plt = pyplot()
    rows = [r for r in report.rows if r.category == ALL and r.spec_tps is not None]
    if not rows:
        return None
    label = _cell_label(rows)
    fig, ax = plt.subplots(figsize=(10, max(3.6, 1.6 + 0.55 * len(rows))))
    ys = list(range(len(rows)))[::-1]
    h = 0.38
    for side, offset, color in (("baseline", h / 2, "#999999"), ("spec", -h / 2, "C0")):
        tps = [getattr(r, f"{side}_tps") or 0 for r in rows]
        sd = [getattr(r, f"{side}_tps_sd") or 0 for r in rows]
        name = "speculative" if side == "spec" else side
        ax.barh([y + offset for y in ys], tps, h, xerr=sd, capsize=3, color=color, label=name)
    # where each cell's longer bar ends, its error bar included
    ends = [
        max((r.spec_tps or 0) + (r.spec_tps_sd or 0), (r.baseline_tps or 0) + (r.baseline_tps_sd or 0))
        for r in rows
    ]
    for y, r, end in zip(ys, rows, ends, strict=True):
        if r.speedup is not None:
            best = " (best)" if r.best else ""
            ax.text(end * 1.02, y - h / 2, f"{r.speedup:.2f}x{best}", va="center", fontsize=8)
    ax.set_yticks(ys, [label(r) for r in rows], fontsize=8)
    ax.set_xlabel("decode throughput (tokens/s, mean +- sd)")
    ax.set_xlim(0, max(ends) * 1.25)  # room for the speedup labels
    ax.set_title(TITLES[TPS_BARS] + " per setting")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return _save(fig, path, report)


def speedup_by_category(report: Report, path: Path) -> Path | None:
    """For each pair and method, its best overall setting, split by prompt category."""
    plt = pyplot()
    overall = [r for r in report.rows if r.category == ALL and r.speedup is not None and not r.synthetic]
    best: dict[tuple, ReportRow] = {}
    for r in overall:
        key = (r.run, r.pair, r.method)
        if key not in best or (r.speedup or 0.0) > (best[key].speedup or 0.0):  # never None (overall)
            best[key] = r
    chosen = list(best.values())
    cats = sorted({r.category for r in report.rows if r.category != ALL})
    if not chosen or not cats:
        return None
    cats.append(ALL)
    label = _cell_label(chosen)
    fig, ax = plt.subplots(figsize=(max(9.0, 3 + 0.6 * len(cats) * len(chosen)), 4.8))
    width = 0.8 / len(chosen)
    for i, cell in enumerate(chosen):
        rows = {r.category: r for r in report.rows if r.run == cell.run and r.cell() == cell.cell()}
        shown = [(j, row) for j, c in enumerate(cats) if (row := rows.get(c)) and row.speedup is not None]
        xs = [j + (i - (len(chosen) - 1) / 2) * width for j, _ in shown]
        bars = [r for _, r in shown]
        ax.bar(
            xs, [r.speedup for r in bars], width, yerr=_err(bars), capsize=3, color=f"C{i}", label=label(cell)
        )
    ax.axhline(1.0, color="black", lw=1, ls="--", label="baseline (1.0x)")
    ax.set_xticks(range(len(cats)), cats)
    ax.set_xlabel("prompt category")
    ax.set_ylabel("speedup (x, 95% CI)")
    ax.set_title(TITLES[CATEGORY] + " (best setting per pair and method)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return _save(fig, path, report)


def tps_vs_ngl(report: Report, path: Path) -> Path | None:
    """Only when ngl was swept: baseline and speculative t/s against target GPU layers."""
    plt = pyplot()
    rows = [r for r in report.rows if r.category == ALL and r.ngl is not None and r.spec_tps is not None]
    if len({r.ngl for r in rows}) < 2:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    label = _cell_label(rows, tuple(k for k in CELL_KEYS if k != GPU_LAYERS.key))  # the x axis
    # one baseline line per run and baseline (``baseline_of``) but its ngl, the x axis
    axes = [ROW_NAMES.get(f, f) for f in BASELINE_FIELDS if f != GPU_LAYERS.key]
    baselines = group_by(rows, lambda r: (r.run, *(getattr(r, k) for k in axes)))
    for key, brs in baselines.items():
        run, target = key[0], brs[0].target
        build = f" {brs[0].build}" if brs[0].build is not None else ""
        points = sorted(
            {(r.ngl, r.baseline_tps, r.baseline_tps_sd or 0) for r in brs if r.baseline_tps is not None}
        )
        if points:
            ngl, tps, sd = zip(*points, strict=True)
            name = f"baseline {target}{build}" + (f" ({run})" if len(report.runs) > 1 else "")
            ax.errorbar(ngl, tps, yerr=sd, color="black", ls="--", marker="s", capsize=3, label=name)
    for i, (name, series) in enumerate(group_by(rows, label).items()):
        series.sort(key=lambda r: r.ngl)
        ls, marker = style(i)
        ngl, tps, sd = zip(*((r.ngl, r.spec_tps, r.spec_tps_sd or 0) for r in series), strict=True)
        ax.errorbar(ngl, tps, yerr=sd, marker=marker, ls=ls, capsize=3, color=f"C{i}", label=name)
    ngls = sorted({r.ngl for r in rows})
    ax.set_xticks(ngls, [str(n) for n in ngls])
    ax.set_xlabel("target layers on the GPU (-ngl)")
    ax.set_ylabel("decode throughput (tokens/s, mean +- sd)")
    ax.set_title(TITLES[NGL])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the lines, not on them
    return _save(fig, path, report)


def speed_plot(report: Report, path: Path) -> Path | None:
    """The speed sentinel's series, only when a run has two readings or more: the reference's decode
    t/s over the run, per run. A flat line is a steady machine; a step or a dip is a phase of the host
    that moved every number measured during it (``specbench.machine.speed``). The band is the run's
    precision around the first reading."""
    runs = [i for i in report.runs if len(i.facts.speed.series()) >= 2]
    if not runs:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for k, info in enumerate(runs):
        color, speed = plt.get_cmap("tab10")(k % 10), info.facts.speed
        start = datetime.fromisoformat(speed.series()[0][0])
        minutes = [(datetime.fromisoformat(at) - start).total_seconds() / 60 for at, _ in speed.series()]
        tps = [v for _, v in speed.series()]
        moved = " (moved)" if speed.warnings else ""
        ls, marker = style(k)
        ax.plot(minutes, tps, marker=marker, ls=ls, color=color, label=f"{info.run}{moved}")
        first, precision = tps[0], speed.precision or DEFAULT_PRECISION
        ax.axhspan(first * (1 - precision), first * (1 + precision), color=color, alpha=0.12)
    reference = runs[0].facts.speed.reference or "the reference"
    ax.set_xlabel("minutes since the first reading")
    ax.set_ylabel(f"t/s: {reference}" if len(reference) < 40 else "reference decode t/s")
    ax.set_title("Machine speed during the run (speed sentinel)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path, report)


def _color(plt, i: int):
    """Up to 20 series apart (tab20), then again from the first."""
    return plt.get_cmap("tab20")(i % 20)


def speedup_vs_accept_len(report: Report, path: Path) -> Path | None:
    """Only when the report has synthetic cells: one curve per setting (x = acceptance length
    counted by the server, else tokens per pass), its real cells as points in the same colour;
    settings without a curve (draft-free methods) are left out."""
    plt = pyplot()
    rows = [r for r in report.rows if r.category == ALL and r.speedup is not None and step_len(r) is not None]
    if not any(r.synthetic for r in rows):
        return None
    label = _cell_label(rows, _CURVE_KEYS)
    fig, ax = plt.subplots(figsize=(8, 5.4))
    for i, (name, series) in enumerate(group_by(rows, label).items()):
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
    ax.set_title("Speedup vs acceptance length (synthetic: the machine's curve)")
    ax.grid(alpha=0.3)
    fig.set_size_inches(fig.get_figwidth(), 4.2 + 0.17 * legend_below(ax, fontsize=7))
    return _save(fig, path, report)


def acceptance_by_position(report: Report, path: Path) -> Path | None:
    """Per cell with server counters: the share of verification steps that accepted the draft's
    token at each position (synthetic cells paler; each cell its own line style and marker)."""
    plt = pyplot()
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
    ax.set_title("Acceptance by draft position")
    ax.grid(alpha=0.3)
    fig.set_size_inches(fig.get_figwidth(), 4.2 + 0.17 * legend_below(ax, fontsize=7))
    return _save(fig, path, report)


def _nan(values: list[float | None]) -> list[float]:
    """A missing value as NaN: matplotlib leaves the point out."""
    return [v if v is not None else float("nan") for v in values]


def speedup_vs_depth(report: Report, path: Path, curves: list[DepthCurve] | None = None) -> Path | None:
    """Only when a setting was measured at two depths or more."""
    curves = depth_curves(report.rows, report.not_run) if curves is None else curves
    if not curves:
        return None
    plt = pyplot()
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


def make_plots(report: Report, out_dir: Path) -> list[Path]:
    """Every figure that applies to the report, written into out_dir: the sweep's, the
    acceptance-length curves, the machine's speed and speculation at depth; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    made = [
        _by_draft(report, out_dir / SPEEDUP, "speedup"),
        tps_bars(report, out_dir / TPS_BARS),
        _by_draft(report, out_dir / ACCEPTANCE, "acceptance"),
        speedup_by_category(report, out_dir / CATEGORY),
        tps_vs_ngl(report, out_dir / NGL),
        speedup_vs_accept_len(report, out_dir / CURVE),
        acceptance_by_position(report, out_dir / BY_POS),
        speed_plot(report, out_dir / SPEED),
        speedup_vs_depth(report, out_dir / DEPTH),
    ]
    return [p for p in made if p is not None]

"""The speed sentinel's series on a small plot: the reference's decode t/s over the run, per run.

A flat line is a steady machine; a step or a dip is a phase of the host that moved every number
measured during it (``specbench.machine.speed``). The band is the run's precision around the
first reading: a reading outside it is what the warning says.
"""

from __future__ import annotations

from pathlib import Path

from specbench.analysis.plots import _plt, _save, style
from specbench.analysis.report import Report

SPEED = "machine_speed.png"
TITLE = "Machine speed during the run (speed sentinel)"
DEFAULT_BAND = 0.03


def speed_plot(report: Report, path: Path) -> Path | None:
    """Only when a run has at least two sentinel readings."""
    runs = [i for i in report.runs if len(i.speed_tps) >= 2]
    if not runs:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for k, info in enumerate(runs):
        color = plt.get_cmap("tab10")(k % 10)
        minutes = [s / 60 for s in info.speed_s]
        moved = " (moved)" if info.speed_warnings else ""
        ls, marker = style(k)
        ax.plot(minutes, info.speed_tps, marker=marker, ls=ls, color=color, label=f"{info.run}{moved}")
        first, precision = info.speed_tps[0], info.speed_precision or DEFAULT_BAND
        ax.axhspan(first * (1 - precision), first * (1 + precision), color=color, alpha=0.12)
    reference = runs[0].speed_reference or "the reference"
    ax.set_xlabel("minutes since the first reading")
    ax.set_ylabel(f"t/s: {reference}" if len(reference) < 40 else "reference decode t/s")
    ax.set_title(TITLE)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path, report)


def speed_plots(report: Report, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    made = speed_plot(report, out_dir / SPEED)
    return [made] if made is not None else []

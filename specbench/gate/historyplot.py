"""``specbench history --plot``: the history of a metric drawn as one line per series over runs."""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path

from specbench.analysis.plots import legend_below, pyplot, style
from specbench.base.paths import check_path, nearest_existing, os_problem, shorten
from specbench.gate.history import HistoryPoint, series_of
from specbench.gate.historydb import HistoryError
from specbench.results.metrics import METRICS

PLOT_FORMATS = ("png", "svg", "pdf", "jpg", "jpeg", "webp", "tif", "tiff", "eps", "ps")


def plot_path(path: Path) -> Path:
    """Where ``--plot PATH`` draws: PATH itself, or PATH.png when it has no extension (said so, as
    the path printed is the file written); a format matplotlib cannot write is refused up front."""
    check_path(path, "--plot")
    suffix = path.suffix.lower().lstrip(".")
    if suffix and suffix not in PLOT_FORMATS:
        raise HistoryError(
            f"--plot {shorten(path)}: cannot draw .{suffix} images; end the name in one of "
            f"{', '.join('.' + f for f in PLOT_FORMATS)}"
        )
    drawn = path if suffix or not path.name else path.with_name(path.name + ".png")
    for place in dict.fromkeys((path, drawn)):
        if place.is_dir() or not place.name:
            raise HistoryError(
                f"--plot {shorten(place)} is a folder; give an image file's path, e.g. "
                f"{shorten(place / 'history.png')}"
            )
    # the image's folder is, or can be made, and takes a file: found before any work, not after the
    # table (a probe file, since root ignores permission bits)
    existing = nearest_existing(drawn)
    if not existing.is_dir():
        raise HistoryError(
            f"--plot {shorten(drawn)}: {shorten(existing)} is a file, not a folder; "
            "give an image path in a folder"
        )
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".specbench-probe-"):
            pass
    except OSError as exc:
        raise HistoryError(
            f"--plot {shorten(drawn)}: cannot write there: {os_problem(exc, existing)}"
        ) from exc
    return drawn


def plot_history(points: list[HistoryPoint], path: Path, metric: str) -> Path:
    """One line per cell over runs (x labelled with date and llama.cpp commit), sd as error bars."""
    path = plot_path(path)
    plt = pyplot()
    runs = sorted({(p.started_at or "", p.run_id, p.commit, p.threads) for p in points})
    x_of = {(started, run_id): i for i, (started, run_id, _, _) in enumerate(runs)}
    fig, ax = plt.subplots(figsize=(max(6.0, 1.0 * len(runs) + 3), 4.5))
    by_cell: dict[tuple, list[HistoryPoint]] = defaultdict(list)
    for p in points:
        by_cell[series_of(p)].append(p)
    several = len({(s[0], s[1]) for s in by_cell}) < len(by_cell)  # one label, several series
    for i, (_, pts) in enumerate(sorted(by_cell.items())):
        p0 = pts[0]
        label = f"{p0.label} [{p0.generation}; {p0.prompts}]" if several else p0.label
        xs = [x_of[(p.started_at or "", p.run_id)] for p in pts]
        ys = [p.mean for p in pts]  # each point's figure and its 95% interval, as `history` prints them
        err = [
            [y - (p.low if p.low is not None else y) for p, y in zip(pts, ys, strict=True)],
            [(p.high if p.high is not None else y) - y for p, y in zip(pts, ys, strict=True)],
        ]
        ls, marker = style(i)  # told apart by line style and marker, not colour alone
        ax.errorbar(xs, ys, yerr=err, marker=marker, ls=ls, capsize=3, label=label)
    ax.set_xticks(range(len(runs)))
    moved = {p.run_id for p in points if p.speed_warned}  # the sentinel saw the machine's speed move
    ax.set_xticklabels([f"{s[:16]}\n{(c or '?')[:8]}\nthreads {t}" + ("\nspeed moved!" if r in moved else "")
                        for s, r, c, t in runs], fontsize=7)  # fmt: skip
    ax.set_ylabel(METRICS[metric].axis)
    ax.set_title(f"specbench history: {metric}")
    ax.grid(alpha=0.3)
    rows = legend_below(ax, fontsize=7, below_pt=62)  # under the date/commit/threads tick labels
    fig.set_size_inches(fig.get_figwidth(), 4.5 + 0.17 * rows)
    fig.tight_layout()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120, bbox_inches="tight", pad_inches=0.15)  # the legend is never clipped
    except OSError as exc:
        raise HistoryError(f"cannot draw --plot {os_problem(exc, path)}") from exc
    finally:
        plt.close(fig)
    return path

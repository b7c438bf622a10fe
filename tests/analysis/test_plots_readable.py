"""The plots stay readable with long labels and many series: a run with option axes
(flash_attn x cache_type_v, a copy of the recorded quickstart-3rep) gives the speedup plot eight
series with long labels and points of one repetition. The legend lies inside the saved image and
off the axes, every series differs by line style or marker (not colour alone), and points without
an interval are named once, not labelled one by one. The history plot likewise."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import pytest

from specbench.analysis import plots
from specbench.analysis.report import build_report
from specbench.gate.history import load_history
from specbench.gate.historydb import record_run
from specbench.gate.historyplot import plot_history

matplotlib.use("Agg")
RECORDED = Path(__file__).resolve().parents[1] / "data" / "runs" / "quickstart-3rep"
COMBOS = [("off", "f16"), ("on", "f16"), ("off", "q8_0"), ("on", "q8_0")]
NOTES = ("baseline (1.0x)", "predicted (Leviathan model)")


def option_run(dst: Path, run_id: str = "qs-rep3", started_at: str | None = None) -> Path:
    """quickstart-3rep at every flash_attn x cache_type_v; the last combination keeps one repetition."""
    dst.mkdir(parents=True)
    m = json.loads((RECORDED / "manifest.json").read_text())
    m.update(run_id=run_id, **({"started_at": started_at} if started_at else {}))
    (dst / "manifest.json").write_text(json.dumps(m))
    samples = [json.loads(x) for x in (RECORDED / "samples.jsonl").read_text().splitlines() if x]
    out = []
    for k, (fa, ctv) in enumerate(COMBOS):
        for s in samples:
            if (fa, ctv) == COMBOS[-1] and s["repetition"] > 0:
                continue
            d = dict(s, run_id=run_id, flash_attn=fa, cache_type_v=ctv)
            if d.get("tps") and d["role"] == "speculative":
                d["tps"] *= 1 + 0.07 * k
            out.append(d)
    (dst / "samples.jsonl").write_text("".join(json.dumps(d) + "\n" for d in out))
    return dst


def _inside_saved_image(fig, path: Path, pad: float = 0.15) -> None:
    """The PNG is the figure's tight box (everything drawn, legends outside the axes included), and
    each legend lies in that box."""
    import matplotlib.image as mpimg
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # a closed figure has lost its canvas: draw it again, unchanged
    canvas.draw()
    renderer = canvas.get_renderer()
    tight = fig.get_tightbbox(renderer)  # inches
    height, width = mpimg.imread(path).shape[:2]
    dpi = width / (tight.width + 2 * pad)
    assert abs(height - (tight.height + 2 * pad) * dpi) <= 3, "the saved image is not the drawn area"
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer).transformed(fig.dpi_scale_trans.inverted())
        assert tight.x0 - 0.01 <= box.x0 and box.x1 <= tight.x1 + 0.01, "legend cut at a side"
        assert tight.y0 - 0.01 <= box.y0 and box.y1 <= tight.y1 + 0.01, "legend cut at the bottom or top"
        axes_box = ax.get_window_extent(renderer).transformed(fig.dpi_scale_trans.inverted())
        assert box.y1 <= axes_box.y0 or box.x0 >= axes_box.x1, "the legend covers the data"


def _styles(ax) -> list[tuple]:
    """(line style, marker) of each legend entry that is a series (not the 1.0 line or a note)."""
    out = []
    for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
        if label in NOTES or "no interval" in label or hasattr(handle, "patches"):
            continue  # a note, or bars (placed apart, their colour is a key)
        line = handle.lines[0] if hasattr(handle, "lines") else handle  # an errorbar's data line
        out.append((str(line.get_linestyle()), str(line.get_marker())))
    return out


@pytest.fixture
def saved(monkeypatch):
    """Every figure plots._save writes, with its path (the figure object outlives its closing)."""
    found: list = []
    real = plots._save

    def spy(fig, path, report):
        out = real(fig, path, report)
        found.append((fig, out))
        return out

    monkeypatch.setattr(plots, "_save", spy)
    return found


def test_the_speedup_plot_of_a_run_with_option_axes_is_readable(tmp_path, saved):
    report = build_report([option_run(tmp_path / "run")])
    assert plots._by_draft(report, tmp_path / plots.SPEEDUP, "speedup") is not None
    ((fig, path),) = saved
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert sum("flash_attn=" in x for x in labels) == 8 and max(map(len, labels)) > 60  # long, many
    _inside_saved_image(fig, path)
    styles = _styles(ax)
    assert len(styles) == 8 and len(set(styles)) == 8  # the 4 draft lines and the 4 n-gram levels
    # the point of one repetition: one legend note, no label beside each point
    assert [x for x in labels if "no interval" in x] == ["hollow: n=1, no interval"]
    assert not [t for t in ax.texts if "no interval" in t.get_text()]


def test_the_other_plots_of_that_run_keep_their_legends_inside(tmp_path, saved):
    report = build_report([option_run(tmp_path / "run")])
    made = plots.make_plots(report, tmp_path / "plots")
    assert len(saved) == len(made) >= 4
    for fig, path in saved:
        _inside_saved_image(fig, path)
        for ax in fig.axes:
            if ax.get_legend() is not None and ax.lines:
                styles = _styles(ax)
                assert len(set(styles)) == len(styles), f"{path.name}: series told apart by colour alone"


def test_the_history_plot_keeps_its_long_labels_inside(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    db = tmp_path / "h.sqlite"
    record_run(option_run(tmp_path / "a", "a", "2026-11-25T12:00:00+00:00"), db)
    record_run(option_run(tmp_path / "b", "b", "2026-11-26T12:00:00+00:00"), db)
    closed = []
    real_close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: (closed.append(fig), real_close(fig)))
    path = plot_history(load_history(db, "speedup"), tmp_path / "h.png", "speedup")
    fig = closed[-1]
    _inside_saved_image(fig, path)
    styles = _styles(fig.axes[0])
    assert len(styles) == 8 and len(set(styles)) == 8

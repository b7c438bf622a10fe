"""Plots drawn as inline SVG on the server side: no plotting library, no network, opens from file://.

Each moving element keeps its x over llama.cpp commits beside its x over time, for the page's
toggle; each point links to its run and names it on hover.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

from specbench.base.formats import epoch_seconds
from specbench.publish.series import Point, Series

# matplotlib's tab10, the report's PNG colours
PALETTE = "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf".split()
W, H = 860, 280
LEFT, RIGHT, TOP, BOTTOM = 62, 60, 14, 58


@dataclass
class Marker:
    """A vertical line at a run that is not a point (an ``ab`` decision)."""

    started_at: str
    commit: str
    text: str
    href: str
    bad: bool


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    span = hi - lo or abs(hi) or 1.0
    step = 10 ** math.floor(math.log10(span / n))
    for m in (1, 2, 5, 10):
        if span / (step * m) <= n:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 10 else f"{v:.0f}"


@dataclass
class Axis:
    """Where each run lies on one x axis of a page (0..1), and the axis labels; computed once per page."""

    kind: str  # time | commit
    x: dict[str, float]  # by run key ("" + started_at for a marker)
    ticks: list[tuple[float, str]]


def axis(series: list[Series], markers: list[Marker], kind: str) -> Axis:
    runs = sorted(
        {(p.started_at, p.commit, p.run_key) for s in series for p in s.points}
        | {(m.started_at, m.commit, "@" + m.started_at) for m in markers}
    )
    if kind == "time":
        t = {r[2]: epoch_seconds(r[0]) or 0.0 for r in runs}  # an unreadable time: the epoch
        lo, hi = min(t.values()), max(t.values())
        if hi <= lo:
            return Axis(kind, {k: 0.5 for k in t}, [(0.5, runs[0][0][:16])])
        span = hi - lo
        ticks = [
            (i / 4, datetime.fromtimestamp(lo + span * i / 4).strftime("%Y-%m-%d %H:%M")) for i in range(5)
        ]
        return Axis(kind, {k: (v - lo) / span for k, v in t.items()}, ticks)
    by_commit: dict[str, list[str]] = {}  # its runs' keys, commits in order of their first run
    for r in runs:
        by_commit.setdefault(r[1], []).append(r[2])
    n = len(by_commit)
    x = {}
    for i, keys in enumerate(by_commit.values()):  # the runs of one commit side by side within its slot
        for j, k in enumerate(keys):
            x[k] = (i + 0.5 + 0.7 * ((j + 1) / (len(keys) + 1) - 0.5)) / n
    every = max(1, n // 14)
    return Axis(kind, x, [((i + 0.5) / n, c[:10]) for i, c in enumerate(by_commit) if i % every == 0])


def trend_svg(
    series: list[Series],
    names: list[str],
    links: Callable[[Point], str],
    axes: tuple[Axis, Axis],
    unit: str,
    markers: Sequence[Marker] = (),
) -> str:
    """One metric's series: lines, 95% bars, flagged points ringed. Drawn over time; each element that
    moves keeps its x over commits in ``data-c`` (the page's script swaps them: one plot, two axes)."""
    by_time, by_commit = axes
    values = [v for s in series for p in s.points for v in (p.mean, p.low, p.high) if v is not None]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    lo, hi = lo - pad, hi + pad
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    scale = ph / (hi - lo)

    def py(v: float) -> float:
        return TOP + (hi - v) * scale

    out = [
        f'<svg class="trend" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
        'xmlns="http://www.w3.org/2000/svg" role="img">',
        f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" class="frame"/>',
    ]
    for t in _nice_ticks(lo, hi):
        y = py(t)
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" class="yl">{_fmt(t)}</text>'
        )
    for ax in axes:  # dates fit level; commit labels are tilted to fit more of them
        hidden = ' style="display:none"' if ax.kind == "commit" else ""
        out.append(f'<g class="ax" data-axis="{ax.kind}"{hidden}>')
        for i, (xv, label) in enumerate(ax.ticks):
            x, y = LEFT + pw * xv, TOP + ph + 16
            ends = {0: "start", len(ax.ticks) - 1: "end"} if len(ax.ticks) > 1 else {}
            turn = f' text-anchor="{ends.get(i, "middle")}"'
            if ax.kind == "commit":
                turn = f' transform="rotate(-30 {x:.1f} {y})" text-anchor="end"'
            out.append(f'<text x="{x:.1f}" y="{y}" class="xl"{turn}>{escape(label)}</text>')
        out.append("</g>")
    out.append(
        f'<text x="14" y="{TOP + ph / 2:.0f}" class="unit" transform="rotate(-90 14 {TOP + ph / 2:.0f})">'
        f"{escape(unit)}</text>"
    )
    for m in markers:
        x, xc = (LEFT + pw * a.x["@" + m.started_at] for a in axes)
        cls = "mk bad" if m.bad else "mk"
        out.append(
            f'<a href="{escape(m.href)}"><line x1="{x:.1f}" x2="{x:.1f}" data-c="{xc:.1f}" y1="{TOP}" '
            f'y2="{TOP + ph}" class="{cls}"><title>{escape(m.text)}</title></line>'
            f'<text x="{x + 3:.1f}" data-c="{xc + 3:.1f}" y="{TOP + 10}" class="mkl">'
            f"{escape(m.text.split(':')[0])}</text></a>"
        )
    for i, s in enumerate(series):
        c = color(i)
        pts = [(LEFT + pw * by_time.x[p.run_key], LEFT + pw * by_commit.x[p.run_key], p) for p in s.points]
        line_t = " ".join(f"{x:.1f},{py(p.mean):.1f}" for x, _, p in sorted(pts, key=lambda t: t[0]))
        line_c = " ".join(f"{x:.1f},{py(p.mean):.1f}" for _, x, p in sorted(pts, key=lambda t: t[1]))
        out.append(
            f'<g class="series" fill="{c}" stroke="{c}"><title>{escape(names[i])}</title>'
            f'<polyline points="{line_t}" data-c="{line_c}" class="ln"/>'
        )
        for x, xc, p in pts:
            y = py(p.mean)
            bar = ring = interval = flag = ""
            if p.low is not None and p.high is not None:
                y1, y2 = py(p.low), py(p.high)
                bar = f'<line x1="{x:.1f}" x2="{x:.1f}" data-c="{xc:.1f}" y1="{y1:.1f}" y2="{y2:.1f}"/>'
                interval = f" [{_fmt(p.low)}, {_fmt(p.high)}]"
            if p.flag:
                ring = f'<circle cx="{x:.1f}" data-c="{xc:.1f}" cy="{y:.1f}" r="7" class="flag {p.flag}"/>'
                flag = escape(f"\n{p.flag}: {p.why}")
            out.append(
                f'<a href="{links(p)}">{bar}{ring}<circle class="pt" cx="{x:.1f}" data-c="{xc:.1f}" '
                f'cy="{y:.1f}" r="3.5"><title>{_fmt(p.mean)}{interval} {unit}, n={p.n_reps}\n'
                f"run {escape(p.run_id)}\nllama.cpp {escape(p.commit[:10])}{flag}</title></circle></a>"
            )
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def sparkline(values: list[float], w: int = 140, h: int = 32) -> str:
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    n = len(values)
    pts = " ".join(
        f"{(i + 0.5) * w / n:.1f},{h - 3 - (h - 6) * (v - lo) / span:.1f}" for i, v in enumerate(values)
    )
    last = pts.rsplit(" ", 1)[-1].split(",")
    return (
        f'<svg class="spark" viewBox="0 0 {w} {h}" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">'
        f'<polyline points="{pts}" class="sl"/><circle cx="{last[0]}" cy="{last[1]}" r="2.5" class="sd"/>'
        "</svg>"
    )

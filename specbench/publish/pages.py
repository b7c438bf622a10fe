"""What each page shows, from the series and the folders: plain data for the templates, no I/O."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from jinja2 import Environment, PackageLoader, select_autoescape

from specbench.analysis.figures import SLOWER, number, pick_best, slower, standing_text
from specbench.gate.decision import ACCEPTANCE_POINTS, ALPHA, THRESHOLD
from specbench.gate.history import span_free
from specbench.publish.folders import AbRun, BisectRun, Folders, reproduce
from specbench.publish.series import Point, Series
from specbench.publish.svg import Marker, axis, color, sparkline, trend_svg
from specbench.results import cell
from specbench.results.metrics import METRICS, site_order

DETECTION = (
    "Flagged points: a point that the rule of `specbench compare` fails (ringed red: regression) or calls "
    "improved (ringed green) against the previous point of its series: one-sided Welch bounds over the "
    f"repetitions (each the centre over prompts) at alpha {ALPHA:g} and a {THRESHOLD:.0%} threshold "
    f"({ACCEPTANCE_POINTS:g} points for acceptance). Each point and its bar are the run's figure and 95% "
    "interval exactly as `specbench report` shows them (the paired speedup's interval over repetitions; the "
    "t interval of the mean for t/s and acceptance), on a linear axis. "
    "Dashed lines are ab runs on this machine."
)

ENV = Environment(
    loader=PackageLoader("specbench.publish", "templates"), autoescape=select_autoescape(["html"])
)


def render(template: str, **context: object) -> str:
    root = "" if template in ("index", "best") else "../"  # every other page lies a folder down
    return ENV.get_template(f"{template}.html").render(root=root, **context)


@lru_cache(maxsize=65536)
def slug(text: str) -> str:
    readable = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40]
    return f"{readable}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def run_page(run_key: str) -> str:
    return f"runs/{hashlib.sha1(run_key.encode()).hexdigest()[:12]}.html"


def ab_href(run_key: str) -> str:
    return f"ab/{slug(run_key)}.html"


def bisect_href(b: BisectRun) -> str:
    return f"bisect/{slug(str(b.path))}.html"


def _ci(p: Point, digits: str = ".2f") -> str:
    return f" [{p.low:{digits}}, {p.high:{digits}}]" if p.low is not None and p.high is not None else ""


@dataclass
class Model:
    """The series indexed the ways the pages look them up."""

    series: list[Series]
    folders: Folders
    by_cell: dict[tuple[str, str], Series] = field(default_factory=dict)  # (metric, cell id)
    baselines: dict[tuple, list[Series]] = field(default_factory=lambda: defaultdict(list))
    pages: dict[tuple[str, str, str], list[Series]] = field(default_factory=lambda: defaultdict(list))

    def __post_init__(self) -> None:
        for s in self.series:
            self.by_cell[(s.metric, s.cell_id)] = s
            if METRICS[s.metric].role == "baseline":
                self.baselines[_baseline_match(s)].append(s)
            elif s.method != "none":
                self.pages[(s.machine, s.pair, s.method)].append(s)

    def baseline_of(self, s: Series) -> list[Series]:
        return self.baselines.get(_baseline_match(s), [])

    def spec_of(self, s: Series) -> Series | None:
        """The spec t/s series of a speedup's cell (a speedup id may carry the span mark)."""
        return self.by_cell.get(("spec_tps", span_free(s.cell_id)))

    def pairs(self) -> dict[tuple[str, str], list[Series]]:
        out: dict[tuple[str, str], list[Series]] = defaultdict(list)
        for (machine, pair, _), found in sorted(self.pages.items()):
            out[(machine, pair)] += found
        return out


# A baseline's fields as a history's cell key names them (the target by sha256; no shard), each with
# its value where the key leaves it out (an axis at its default, after the first run-folder format).
_MATCHED = tuple(("target", None) if f == "model" else (f, cell.default(f))
                 for f in cell.BASELINE_FIELDS if f not in cell.RUN_LOCAL)  # fmt: skip


def _baseline_match(s: Series) -> tuple:
    """What a speculative cell shares with its baseline (``results.cell.BASELINE_FIELDS``), plus how
    it was measured."""
    return (s.machine, *(s.key.get(f, d) for f, d in _MATCHED), s.generation, s.prompts)


def _ab_words(folders: Folders, machine: str, pair: str) -> list[tuple[AbRun, str]]:
    """The ab runs of this machine that decided on this pair, with their word, oldest first."""
    return [(ab, word) for ab in folders.abs if ab.run.machine == machine and (word := ab.worst(pair))]


def ab_markers(folders: Folders, machine: str, pair: str) -> list[Marker]:
    return [
        Marker(
            started_at=ab.run.started_at,
            commit=ab.run.builds.get(ab.comparison.head if ab.comparison else "head", "?"),
            text=f"ab {word}: {ab.run.run_id}",
            href="../" + ab_href(ab.run.key),
            bad=word == "fail",
        )
        for ab, word in _ab_words(folders, machine, pair)
    ]


def _order(s: Series) -> tuple:
    values = [s.key.get(a) for a in cell.SETTING_FIELDS]
    return tuple((v is None, v if isinstance(v, int | float) else str(v)) for v in values)


def _axis(s: Series, name: str) -> object:
    """A series' value of an axis: history leaves an axis at its default out of the stored key
    (a process run has no ``runner``), so absent means the default (``process``), never ``None``."""
    return s.key[name] if name in s.key else cell.default(name)


def names(shown: list[Series]) -> list[str]:
    """Each series by the settings that differ between the series of one plot (all of them when one)."""
    varying = [a for a in cell.SETTING_FIELDS if len({repr(_axis(s, a)) for s in shown}) > 1]
    if not varying:
        return [s.setting for s in shown]
    return [
        " ".join(f"{a}={_axis(s, a)}" for a in varying)
        + ("" if len({s.prompts for s in shown}) < 2 else f" [{s.prompts}]")
        for s in shown
    ]


def trend_page(model: Model, machine: str, pair: str, method: str) -> str:
    spec = sorted(model.pages[(machine, pair, method)], key=_order)
    link: Callable[[Point], str] = lambda p: "../" + run_page(p.run_key)  # noqa: E731
    markers = ab_markers(model.folders, machine, pair)
    bases = [b for s in spec if s.metric == "spec_tps" for b in model.baseline_of(s)]  # of the page's cells
    by_time, by_commit = axis(spec + bases, markers, "time"), axis(spec + bases, markers, "commit")
    metrics, flagged = [], []
    for metric in site_order():
        baseline = METRICS[metric].role == "baseline"
        if baseline:
            shown = sorted({id(b): b for b in bases if b.metric == metric}.values(), key=_order)
        else:
            shown = [s for s in spec if s.metric == metric]
        if not shown:
            continue
        called = names(shown) if not baseline else [s.label for s in shown]
        metrics.append(
            dict(
                title=METRICS[metric].title,
                legend=[(name, color(i)) for i, name in enumerate(called)],
                plot=trend_svg(shown, called, link, (by_time, by_commit), METRICS[metric].site_unit, markers),
            )
        )
        flagged += [
            dict(metric=metric, setting=name, href=link(p), point=p)
            for s, name in zip(shown, called, strict=True)
            for p in s.points
            if p.flag
        ]
    return render(
        "trend",
        title=f"{pair} {method}",
        pair=pair,
        method=method,
        machine=machine,
        detection=DETECTION,
        metrics=metrics,
        flagged=flagged,
    )


def trend_href(machine: str, pair: str, method: str) -> str:
    return f"trend/{slug(machine + '|' + pair + '|' + method)}.html"


def _card(model: Model, machine: str, pair: str, found: list[Series]) -> dict:
    per_run: dict[str, list[tuple[Series, Point]]] = defaultdict(list)
    for s in found:
        if s.metric == "speedup":
            for p in s.points:
                per_run[p.run_key].append((s, p))
    picks = [
        pick_best(points, lambda t: (t[1].mean, t[1].low, t[1].high), lambda t: t[0].synthetic)
        for points in per_run.values()
    ]
    # (start, best's series and point, its Best) per run, oldest first
    ordered = sorted(
        ((b.item[1].started_at, b.item, b) for b in picks if b.item is not None), key=lambda t: t[0]
    )
    card = dict(
        pair=pair,
        speedup="-",
        cell="-",
        spec="-",
        baseline="-",
        spark="",
        n_runs=len(ordered),
        why="",
        gate="no earlier run",
        gate_class="muted",
        ab=None,
        trends=[
            (m, trend_href(machine, pair, m)) for (mc, pr, m) in model.pages if (mc, pr) == (machine, pair)
        ],
    )
    if ordered:
        _, (s, p), latest = ordered[-1]
        card.update(cell=s.setting, spark=sparkline([q.mean for _, (_, q), b in ordered if b.decided]))
        figure = f"{p.mean:.2f}x{_ci(p)}"
        if latest.decided and slower(p.low, p.high):  # a slowdown is never the headline figure
            card.update(speedup=SLOWER, why=f"{figure}: the fastest setting, slower than its baseline")
        elif latest.decided:  # the one rule of what may be called best (analysis.figures.pick_best)
            card["speedup"] = figure
        else:  # no headline figure: say what the highest cell is instead
            card.update(speedup=str(latest.standing), why=f"{figure}: {standing_text(latest.standing)}")
        spec = model.spec_of(s)
        sp = spec.at(p.run_key) if spec else None
        card["spec"] = number(sp.mean) if sp else "-"
        bases = [q for b in (model.baseline_of(spec) if spec else []) if (q := b.at(p.run_key))]
        card["baseline"] = number(bases[0].mean) if bases else "-"
        # Like with like: a point of the latest run is judged only against the earlier point of its
        # own series (the same cell, prompts, generation, runner and machine); a run of another
        # config has no such point, and a merged run's shards are no runs of their own in history.
        compared = [q for x in found for i, q in enumerate(x.points) if q.run_key == p.run_key and i > 0]
        if compared:
            bad = sum(q.flag == "regression" for q in compared)
            good = sum(q.flag == "improvement" for q in compared)
            if bad:
                card.update(gate=f"fail ({bad} regressions flagged)", gate_class="fail")
            elif good:
                card.update(gate=f"improved ({good} cells)", gate_class="improved")
            else:
                card.update(
                    gate=f"pass: no change beyond the noise ({len(compared)} series)", gate_class="pass"
                )
        elif len(ordered) > 1:
            card["gate"] = "no earlier run of the same config (the earlier runs measured other cells)"
    if decided := _ab_words(model.folders, machine, pair):
        ab, word = decided[-1]
        card.update(ab=word, ab_when=ab.run.started_at[:16], ab_href=ab_href(ab.run.key))
    return card


def index_page(model: Model, summary: str, empty: str, notes: list[str]) -> str:
    machines: dict[str, list[dict]] = defaultdict(list)
    for (machine, pair), found in model.pairs().items():
        machines[machine].append(_card(model, machine, pair, found))
    abs_ = [
        dict(
            run=a.run.run_id,
            href=ab_href(a.run.key),
            machine=a.run.machine,
            builds=", ".join(f"{k} {v[:10]}" for k, v in a.run.builds.items()),
            decision=a.worst() or "-",
        )
        for a in reversed(model.folders.abs)
    ]
    bisects = [
        dict(name=b.path.name, href=bisect_href(b), metric=b.state.metric, result=bisect_result(b)[0])
        for b in model.folders.bisects
    ]
    return render(
        "index",
        title="results",
        summary=summary,
        empty=empty,
        machines=sorted(machines.items()),
        abs=abs_,
        bisects=bisects,
        notes=notes,
    )


def ab_page(ab: AbRun) -> str:
    c = ab.comparison
    rows = []
    for d in c.decisions if c else []:
        fmt = (lambda v: f"{v:+.1f} pt") if d.unit == "points" else (lambda v: f"{v:.3f}")
        ci = "-" if d.ci_low is None or d.ci_high is None else f"[{fmt(d.ci_low)}, {fmt(d.ci_high)}]"
        p = "-" if d.p_value is None else f"{d.p_value:.3g}"
        rows.append(dict(d=d, ratio="-" if d.ratio is None else fmt(d.ratio), ci=ci, p=p))
    base, head = (c.base, c.head) if c else ("base", "head")
    return render(
        "ab",
        title=f"ab {ab.run.run_id}",
        run_id=ab.run.run_id,
        machine=ab.run.machine,
        base=f"{base} ({ab.run.builds.get(base, '?')[:10]})",
        head=f"{head} ({ab.run.builds.get(head, '?')[:10]})",
        threshold=f"{c.threshold:.0%}" if c else "-",
        decision=ab.worst() or "-",
        problem=ab.problem,
        rows=rows,
        run_href="../" + run_page(ab.run.key),
    )


def bisect_result(b: BisectRun) -> tuple[str, str]:
    st = b.state
    lo, hi, stopped = st.bounds()
    if st.first_bad is not None:
        note = " (not measured: every commit before it passed)" if st.bad_unmeasured else ""
        return f"first bad commit: {st.first_bad.short} {st.first_bad.subject}{note}", "fail"
    if stopped is not None:
        left = st.commits[lo].short if lo >= 0 else st.good[:10]
        return (
            f"undecided at {stopped.commit[:10]}: the change lies after {left}, up to {st.commits[hi].short}",
            "undecided",
        )
    return f"unfinished: {len([s for s in st.steps if s.status is not None])} steps done", "undecided"


def bisect_page(b: BisectRun, ab_keys: dict[str, str]) -> str:
    st = b.state
    subjects = {c.sha: c.subject for c in st.commits}
    steps = []
    for n, s in enumerate(st.steps, 1):
        ci = "-" if s.ci_low is None or s.ci_high is None else f"[{s.ci_low:.3f}, {s.ci_high:.3f}]"
        href = ab_keys.get(str(b.step_dir(s.run_dir).resolve()))
        steps.append(
            dict(
                n=n,
                commit=s.commit[:10],
                subject=subjects.get(s.commit, ""),
                ratio=number(s.ratio, ".3f"),
                ci=ci,
                decision=s.word,
                href=href and "../" + href,
            )
        )
    result, cls = bisect_result(b)
    return render(
        "bisect",
        title=f"bisect {b.path.name}",
        name=b.path.name,
        source=st.source,
        good=st.good[:10],
        bad=st.bad[:10],
        metric=st.metric,
        threshold=f"{st.threshold:.0%}",
        n_commits=len(st.commits),
        steps=steps,
        result=result,
        result_class=cls,
    )


def best_page(model: Model) -> str:
    machines: dict[str, list[dict]] = defaultdict(list)
    for (machine, pair), found in model.pairs().items():
        latest = [s for s in found if s.metric == "speedup"]
        best = pick_best(
            latest, lambda s: (s.latest.mean, s.latest.low, s.latest.high), lambda s: s.synthetic
        )
        if best.item is None:
            continue
        sp, q = best.item, best.item.latest
        spec = model.spec_of(sp)
        p = spec.at(q.run_key) if spec else None
        figure = f"{q.mean:.2f}x{_ci(q)}"
        machines[machine].append(
            dict(
                pair=pair,
                method=sp.method,
                setting=sp.setting,
                spec=f"{p.mean:.1f}{_ci(p, '.1f')}" if p else "-",
                speedup=figure if best.decided else f"{best.standing}: {figure}",
                run=q.run_id,
                href=run_page(q.run_key),
                command=reproduce(model.folders.runs.get(q.run_key), pair, sp.key),
            )
        )
    return render("best", title="best settings", machines=sorted(machines.items()))

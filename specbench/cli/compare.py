"""`specbench compare`, `specbench baseline save|list`: the CI regression gate (`specbench history` is in
``specbench.cli.history``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from specbench.analysis.figures import speedup_text
from specbench.base.formats import md_escape as esc
from specbench.base.formats import md_table
from specbench.cli.common import Col, app, echo, metric_text, say, say_notes
from specbench.cli.gateview import paired_from_run, show
from specbench.cli.options import AllowNoisy
from specbench.cli.output import Format, TableFormat, print_json, print_table, step_summary
from specbench.gate.decision import ACCEPTANCE_POINTS, ALPHA, THRESHOLD, VERDICT_WORDS, Verdict
from specbench.results.metrics import METRICS, choices

baseline_app = typer.Typer(
    help="Save and list baselines (compact run copies to commit).", no_args_is_help=True
)
app.add_typer(baseline_app, name="baseline")

STYLE = {
    "fail": "bold red",
    "warn": "yellow",
    "too_noisy": "magenta",
    "improved": "green",
    "only_baseline": "dim",
    "only_current": "dim",
}


def _side(d, metric: str, which: str) -> str:
    if d is None:
        return "-"
    mean, sd, n = (d.mean_base, d.sd_base, d.n_base) if which == "base" else (d.mean_cur, d.sd_cur, d.n_cur)
    sd_text = f" ± {metric_text(sd, metric)}" if sd is not None else ""
    return f"{metric_text(mean, metric)}{sd_text} (n={n})"


def _mde_value(mde: float, metric: str) -> str:
    return f"{mde:.1f} points" if METRICS[metric].scale == "points" else f"{mde * 100:.1f}%"


def _rows(metric_result) -> list[list[str]]:
    rows = []
    metric = metric_result.metric
    for c in metric_result.cells:
        d = c.decision
        p = f"{d.p_value:.3g}" if d is not None and d.p_value is not None else "-"
        mde = "-" if d is None or d.mde is None else _mde_value(d.mde, metric)
        rows.append([str(c.status), c.label, c.prompt_id, _side(d, metric, "base"), _side(d, metric, "cur"),
                     p, mde, c.reason])  # fmt: skip
    return rows


UNPAIRED_NOTE = (
    "two separate runs cannot see a change smaller than the drift between them (6-21% between runs "
    "on a shared 2-core VM); `specbench ab` measures both builds in one interleaved run"
)
COLUMNS = ["status", "cell", "prompt", "baseline", "current", "p", "mde", "why"]
FIGURES = "each cell over its prompts, as `specbench report` shows it (baseline -> current):"


def _summary(m) -> str:
    if m.nothing:
        return f"{m.metric}: nothing to compare: {m.nothing}"
    counts = ", ".join(
        f"{m.count(s)} {s.replace('_', ' ')}"
        for s in ("fail", "warn", "too_noisy", "improved", "pass", "only_baseline", "only_current")
        if m.count(s)
    )
    if not m.geomean_ratio:
        return f"{m.metric}: {counts}"
    change = (m.geomean_ratio - 1) * 100
    return f"{m.metric}: {counts}; geometric mean ratio {m.geomean_ratio:.3f} ({change:+.1f}%)"


def _facts(ref: str, f) -> str:
    commit = (f.llama_cpp_commit or "unknown")[:12]
    status = f", {f.status}" if f.status and f.status != "complete" else ""
    return f"{ref} (run {f.run_id}{status}, llama.cpp {commit}, {f.machine.describe()})"


def _n(count: int, what: str) -> str:
    return f"{count} {what}" + ("" if count == 1 else "s")


def _verdict(cmp) -> str:
    """The last line: the verdict, what made it, and what to do."""
    flags = [f for f, on in (("strict", cmp.strict), ("allow-noisy", cmp.allow_noisy)) if on]
    in_points = [m.metric for m in cmp.metrics if m.metric in METRICS and METRICS[m.metric].scale == "points"]
    points = f" ({ACCEPTANCE_POINTS:g} points for {', '.join(in_points)})" if in_points else ""
    opts = f"threshold {cmp.threshold:.1%}{points}, alpha {cmp.alpha:g}" + "".join(f", {f}" for f in flags)
    noisy = cmp.undecided
    spans = []
    for m in cmp.metrics:
        mdes = sorted(c.decision.mde for c in m.cells if c.status == "too_noisy" and c.decision
                      and c.decision.mde is not None)  # fmt: skip
        if mdes:
            lo, hi = _mde_value(mdes[0], m.metric), _mde_value(mdes[-1], m.metric)
            spans.append(f"{m.metric} {lo}" if lo == hi else f"{m.metric} {lo} to {hi}")
    detectable = f"; smallest detectable change {', '.join(spans)}" if spans else ""
    too_noisy = f"{_n(len(noisy), 'cell')} too noisy to decide{detectable}"
    v = cmp.verdict
    word = VERDICT_WORDS[v]
    if v == Verdict.FAIL:
        kinds = {  # each kind of failed cell, counted, and what would let it pass
            "fail": ("regression", ""),
            "warn": ("warning", " (--strict)"),
            "only_baseline": ("cell", " missing from the current run (--allow-missing to accept)"),
        }
        failed = [str(c.status) for c in cmp.failed]
        parts = [f"{_n(failed.count(s), word)}{why}" for s, (word, why) in kinds.items() if s in failed]
        parts += [f"nothing to compare: {n}" for n in cmp.nothing] + ([too_noisy] if noisy else [])
        return f"{word}: {'; '.join(parts)} ({opts})"
    if v == Verdict.NOTHING:
        return f"{word}: {'; '.join(cmp.nothing)} ({opts})"
    if v == Verdict.UNDECIDED:
        return (
            f"{word}: {too_noisy}: a {cmp.threshold:.1%} regression can be neither shown nor excluded; "
            f"more repetitions (repetitions: auto), a quieter machine, or --allow-noisy ({opts})"
        )
    return f"{word}{f' with {too_noisy} (--allow-noisy)' if noisy else ''} ({opts})"


def _figure_lines(m) -> list[str]:
    """A speedup's per-cell figure on each side, as ``report`` prints it."""
    if m.metric not in METRICS or not METRICS[m.metric].paired:
        return []

    def shown(f) -> str:
        return "-" if f is None else speedup_text(f.value, f.low, f.high, f.n)

    return [f"{c.label}: {shown(c.baseline)} -> {shown(c.current)}" for c in m.figures]


def to_markdown(cmp) -> str:
    out = ["## specbench compare", "", f"- baseline: {esc(_facts(cmp.baseline_ref, cmp.baseline))}",
           f"- current: {esc(_facts(cmp.current_ref, cmp.current))}"]  # fmt: skip
    out += [f"- differs: {esc(d)}" for d in cmp.differences]
    for m in cmp.metrics:
        out += ["", f"### {m.metric} ({m.unit})", ""]
        if not m.nothing:
            out += md_table(COLUMNS, _rows(m))
            if figures := _figure_lines(m):
                out += ["", FIGURES.capitalize(), "", *(f"- {esc(line)}" for line in figures)]
            out.append("")
        out.append(f"**{esc(_summary(m))}**")
    out += ["", f"**{_verdict(cmp)}**", ""]
    return "\n".join(out)


def _print_table(cmp) -> None:
    say(f"baseline: {_facts(cmp.baseline_ref, cmp.baseline)}")
    say(f"current:  {_facts(cmp.current_ref, cmp.current)}")
    for d in cmp.differences:
        say(f"differs:  {d}")
    for m in cmp.metrics:
        if not m.nothing:
            rows = _rows(m)
            print_table([Col(c, wrap=c in ("cell", "why")) for c in COLUMNS], rows, Format.table,
                        f"{m.metric} ({m.unit})", ("p", "mde", "baseline", "current", "prompt", "why"),
                        title_justify="left", row_styles=[STYLE.get(r[0], "") for r in rows])  # fmt: skip
            if figures := _figure_lines(m):
                say(FIGURES)
                for line in figures:
                    say(f"  {line}")
        say(_summary(m))
    say(f"note: {UNPAIRED_NOTE}")  # before the verdict, which stays the last line
    style = {0: "bold green", 1: "bold red"}.get(cmp.exit_code, "bold magenta")
    say(_verdict(cmp), style=style)


@app.command("compare")
def compare_cmd(
    baseline: Annotated[
        str, typer.Argument(help="Baseline: a NAME in results/baselines/, a baseline .json, or a run folder.")
    ],
    current: Annotated[
        str | None,
        typer.Argument(help="Current: a run folder (or a baseline). Omit it to gate one multi-build run."),
    ] = None,
    threshold: Annotated[
        str, typer.Option(metavar="CHANGE", help="Relative change that counts: 5% or 0.05.")
    ] = f"{THRESHOLD:.0%}",
    alpha: Annotated[
        float | None,
        typer.Option(
            metavar="P",
            help=f"One-sided significance level (default {ALPHA:g}; one multi-build run: the 95% interval).",
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            metavar="METRIC",
            help=f"{choices()}; repeatable. Default: both t/s, and "
            "acceptance where both sides speculated at temperature 0.",
        ),
    ] = None,
    fmt: TableFormat = Format.table,
    strict: Annotated[bool, typer.Option(help="Treat warnings as failures.")] = False,
    allow_missing: Annotated[
        bool, typer.Option(help="Pass cells the current run did not measure (default: they fail).")
    ] = False,
    allow_noisy: AllowNoisy = False,
    allow_output_change: Annotated[
        bool,
        typer.Option(help="Warn instead of failing when a greedy cell's generated text changed."),
    ] = False,
    base: Annotated[
        str | None, typer.Option(metavar="LABEL", help="One multi-build run: the reference build's label.")
    ] = None,
    head: Annotated[
        str | None, typer.Option(metavar="LABEL", help="One multi-build run: the build under test's label.")
    ] = None,
) -> None:
    """Compare two runs cell by cell; exit 0 pass, 1 regression, 2 not comparable or bad input,
    3 too noisy to decide, 4 nothing to compare.

    A cell fails when its change is significant and beyond --threshold, whatever the noise; it
    passes only when the data excludes a regression of that size; else it is too noisy to decide.
    A cell with no valid value on a side, or missing from the current run (unless
    --allow-missing), fails."""
    from specbench.gate.baseline import InputError, load_side, running_notes
    from specbench.gate.compare import compare, default_metrics
    from specbench.gate.regression import parse_threshold

    thr = parse_threshold(threshold)
    if current is None or base is not None or head is not None:  # one run, two builds: the paired gate
        if current is not None or not Path(baseline).is_dir():
            raise InputError(
                "give BASELINE CURRENT (two runs), or one run folder that measured two builds "
                "(`specbench compare RUN [--base LABEL --head LABEL]`)"
            )
        if alpha is not None and not 0 < alpha < 0.5:
            raise InputError(f"--alpha {alpha}: must be between 0 and 0.5 (e.g. 0.025)")
        if strict:  # said, not silently ignored
            say("note: --strict has no effect on one multi-build run: the paired gate has no warnings "
                "to make failures", err=True)  # fmt: skip
        options: dict[str, Any] = {"allow_missing": allow_missing, "allow_noisy": allow_noisy}
        if alpha is not None:  # one-sided alpha: the two-sided interval of 1 - 2 alpha, as compare's
            options["confidence"] = 1 - 2 * alpha
        show(paired_from_run(Path(baseline), base, head, metric, thr, **options), fmt)
    sides = load_side(baseline), load_side(current)
    say_notes([n for side in sides for n in [*side.notes, *running_notes(side)]])
    alpha = ALPHA if alpha is None else alpha
    metrics = metric or default_metrics(*sides)
    cmp = compare(*sides, metrics, thr, alpha, strict, allow_missing, allow_noisy, allow_output_change)
    if fmt == Format.json:
        data = cmp.model_dump(mode="json")
        data["verdict"], data["exit_code"] = str(cmp.verdict), cmp.exit_code
        data["note"] = UNPAIRED_NOTE
        print_json(data)
    elif fmt == Format.md:
        echo(to_markdown(cmp) + f"\n{UNPAIRED_NOTE}")
    elif fmt == Format.csv:  # every metric's rows, named; the verdict on stderr
        rows = [[m.metric, *row] for m in cmp.metrics for row in _rows(m)]
        print_table([Col(c) for c in ["metric", *COLUMNS]], rows, fmt)
        say(_verdict(cmp), err=True)
    else:
        _print_table(cmp)
    step_summary(to_markdown(cmp))
    raise typer.Exit(cmp.exit_code)


def _baseline_name(text: str) -> str:
    """``--name``, checked as it is parsed (it becomes the file NAME.json); imported only then."""
    from specbench.gate.baseline import baseline_name

    return baseline_name(text)


@baseline_app.command("save")
def baseline_save(
    run_dir: Annotated[Path, typer.Argument(help="The run folder to save.")],
    name: Annotated[
        str,
        typer.Option(
            metavar="NAME", parser=_baseline_name, help="Baseline name, e.g. ci-rtx4090 (one per machine)."
        ),
    ],
    out_dir: Annotated[
        Path | None,
        typer.Option("--dir", metavar="DIR", help="Where to write NAME.json (default results/baselines)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing baseline of that name.")] = False,
) -> None:
    """Write results/baselines/NAME.json: the samples and machine facts compare needs. Commit it."""
    from specbench.gate.baseline import save_baseline

    saved = save_baseline(run_dir, name, out_dir, force)
    say_notes(saved.notes)
    size = saved.path.stat().st_size / 1024
    say(f"saved baseline {saved.path.stem}: {saved.path} ({size:.0f} KiB); commit it")


@baseline_app.command("list")
def baseline_list(
    out_dir: Annotated[
        Path | None,
        typer.Option("--dir", metavar="DIR", help="Where the baselines are (default results/baselines)."),
    ] = None,
    fmt: TableFormat = Format.table,
) -> None:
    """List saved baselines."""
    from specbench.gate.baseline import baselines_dir, list_baselines

    listed = list_baselines(out_dir)
    if not listed and fmt == Format.table:
        say(f"no baselines in {out_dir or baselines_dir()}")
        return
    rows = []
    for b in listed:
        if b.side is None:
            rows.append([b.name, "-", "-", "-", f"unreadable: {b.problem}"])
            continue
        f = b.side.facts
        status = f" ({f.status})" if f.status and f.status != "complete" else ""
        commit = (f.llama_cpp_commit or "unknown")[:12]
        rows.append([b.name, f"{f.run_id}{status}", commit, f.machine.describe(), str(b.path)])
    cols = [Col("baseline"), Col("run"), Col("llama.cpp"), Col("machine", wrap=True), Col("file", wrap=True)]
    print_table(cols, rows, fmt, box=None)

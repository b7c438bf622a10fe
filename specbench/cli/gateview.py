"""The paired gate on screen (`ab`, `bisect`, `compare RUN`): its table, verdict, Markdown and JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer

from specbench.base.formats import md_escape as esc
from specbench.base.formats import md_table
from specbench.base.stats import CONFIDENCE
from specbench.cli.common import Col, echo, say, say_notes
from specbench.cli.output import Format, print_json, print_table, step_summary
from specbench.gate.decision import ACCEPTANCE_POINTS, VERDICT_WORDS, Verdict

STYLE = {"fail": "bold red", "undecided": "magenta", "improved": "green"}
COLUMNS = ["decision", "metric", "cell", "head/base", "95% CI", "p", "pairs", "detectable", "why"]


def _ratio(d, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:+.1f} pt" if d.unit == "points" else f"{value:.3f}"


def _rows(cmp) -> list[list[str]]:
    rows = []
    for d in cmp.decisions:
        ci = f"[{_ratio(d, d.ci_low)}, {_ratio(d, d.ci_high)}]" if d.ci_low is not None else "-"
        p = f"{d.p_value:.3g}" if d.p_value is not None else "-"
        if d.detectable is None:
            det = "-"
        else:
            det = f"±{d.detectable:.1f} pt" if d.unit == "points" else f"±{d.detectable * 100:.1f}%"
        rows.append([d.decision, d.metric, d.cell, _ratio(d, d.ratio), ci, p, str(d.n_pairs), det, d.reason])
    return rows


def _sides(cmp) -> str:
    """``head X vs base Y``; ``head vs base`` when the labels are those words (``specbench ab``)."""

    def side(word: str, label: str) -> str:  # labels that are the words themselves, swapped: name them
        if label == word:
            return label
        return f"{word} ({label})" if label in ("head", "base") else f"{word} {label}"

    return f"{side('head', cmp.head)} vs {side('base', cmp.base)}"


def _verdict(cmp) -> str:
    counts = ", ".join(
        f"{n} {word}"
        for word in ("fail", "undecided", "improved", "pass")
        if (n := sum(d.decision == word for d in cmp.decisions))
    )
    parts = [counts] if counts else []
    parts += [f"nothing to compare: {n}" for n in cmp.nothing]
    word = VERDICT_WORDS[cmp.verdict]
    undecided = [d for d in cmp.decisions if d.decision == "undecided"]
    if cmp.verdict == Verdict.PASS and undecided:
        word += " (--allow-noisy)"
    if undecided:  # the unpaired gate's wording: what the pairs could have shown
        parts.append(
            f"a {cmp.threshold:.1%} regression can be neither shown nor excluded in {len(undecided)}"
        )
        known = [d for d in undecided if d.detectable is not None and d.unit != "points"]
        if known:
            parts.append(f"smallest detectable change up to ±{max(d.detectable for d in known):.1%}")
    opts = f"threshold {cmp.threshold:.1%}"
    if any(d.unit == "points" for d in cmp.decisions):
        opts += f" ({ACCEPTANCE_POINTS:g} points for acceptance)"
    if cmp.confidence != CONFIDENCE:
        opts += f", {cmp.confidence:.0%} intervals"
    return f"{word}: {'; '.join(parts) or 'no cell'} ({_sides(cmp)}, {opts})"


def to_markdown(cmp) -> str:
    out = [f"## specbench ab: {esc(cmp.head)} vs {esc(cmp.base)}", "", f"run: `{cmp.run}`", ""]
    out += [*md_table(COLUMNS, _rows(cmp)), "", f"**{esc(_verdict(cmp))}**", ""]
    return "\n".join(out)


def show(cmp, fmt: Format) -> NoReturn:
    """Print a paired comparison, append it to the GitHub job summary, exit with its code."""
    if fmt == Format.json:
        print_json(cmp.model_dump(mode="json"))
    elif fmt == Format.md:
        echo(to_markdown(cmp))
    elif fmt == Format.csv:  # the rows alone; the verdict on stderr
        print_table([Col(c) for c in COLUMNS], _rows(cmp), fmt)
        say(_verdict(cmp), err=True)
    else:
        rows = _rows(cmp)
        print_table([Col(c, wrap=c in ("why", "cell")) for c in COLUMNS], rows, Format.table,
                    f"{_sides(cmp)} ({cmp.run})", ("p", "detectable", "pairs", "why", "95% CI"),
                    title_justify="left", row_styles=[STYLE.get(r[0], "") for r in rows])  # fmt: skip
        say(_verdict(cmp), style="bold red" if cmp.exit_code else "bold green")
    step_summary(to_markdown(cmp))
    raise typer.Exit(cmp.exit_code)


def paired_from_run(
    run_dir: Path, base: str | None, head: str | None, metrics, threshold: float, **options: Any
):
    """The paired gate over one run folder; ``options``: confidence, allow_missing, allow_noisy."""
    from specbench.gate.ab import paired_compare
    from specbench.gate.baseline import load_run, running_notes
    from specbench.results.metrics import PAIRED_DEFAULT

    side = load_run(run_dir)
    say_notes([*side.notes, *running_notes(side)])
    return paired_compare(
        side.samples, str(run_dir), base, head, metrics or PAIRED_DEFAULT, threshold, **options
    )

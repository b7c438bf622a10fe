"""`specbench ab` and `specbench bisect`: two llama.cpp builds in one interleaved run, a paired gate."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from specbench.base.errors import ConfigError
from specbench.cli.common import app, check_paths, say, say_notes
from specbench.cli.gateview import paired_from_run, show
from specbench.cli.options import AllowNoisy, Budget, Quiet, Sets, Threshold
from specbench.cli.output import Format, TableFormat
from specbench.cli.session import RunSession, warn_busy
from specbench.gate.abrun import load_builds_config, measuring_is_input, round_notes, rounds_end
from specbench.gate.decision import STILL_OPEN, THRESHOLD, Status
from specbench.results.folder import resume_command
from specbench.results.metrics import PAIRED_DEFAULT, check_metric, choices, roles_read

RunConfig = Annotated[
    Path, typer.Argument(metavar="CONFIG", help="The run config (YAML), e.g. configs/ci.yaml.")
]


def run_builds(
    config: Path,
    sets: list[str],
    specs: Sequence[tuple[str, str | None, str | None]],
    run_dir: Path,
    quiet: bool,
    metrics: list[str],
    threshold: float,
    resume_hint: str | None = None,
    budget_s: float | None = None,
    open_: frozenset[Status] = STILL_OPEN,
    typed: dict[str, str] | None = None,
):
    """Run CONFIG with these builds (label, source, ref) into ``run_dir`` (continued if it exists),
    adding rounds while the gate leaves a cell undecided (``open_``), up to ``max_repetitions`` or
    ``budget_s``, as Pinpoint does. ``resume_hint``: the options that continue it (``--out DIR``)."""
    from specbench.execute import benchmark
    from specbench.gate.ab import undecided_samples
    from specbench.machine.contention import RERUN_NOTE_END
    from specbench.results.folder import has_manifest

    cfg = load_builds_config(config, sets, specs, typed)
    resume = has_manifest(run_dir)
    session = RunSession(quiet, run_dir)
    session.open_folder(resume)
    if resume:  # another run's folder (or these builds at other refs): refused before building
        benchmark.check_resume_config(run_dir, cfg)
    prepared = session.prepare(cfg, roles=roles_read(metrics))
    say_notes(round_notes(prepared.plan.notes, cfg, budget_s))  # before the first sample, as `run` does

    def interrupted(exc) -> str:
        return (
            f"interrupted ({exc.reason}): {exc.kept} kept in {exc.run_dir}; the same command with "
            f"{resume_hint or f'--out {exc.run_dir}'} continues it ({resume_command(exc.run_dir)}: "
            "without the gate)"
        )

    with session.measuring(interrupted) as view:
        base, head = specs[0][0], specs[1][0]
        summary = benchmark.run_benchmark(
            prepared, run_dir, resume=resume, progress=view, command_line=["specbench", *sys.argv[1:]],
            undecided=lambda samples: undecided_samples(samples, base, head, metrics, threshold, open_),
            budget_s=budget_s,
        )  # fmt: skip
    warn_busy(summary.noise, "the pairs may be too noisy to decide (measure on a quiet machine)",
              "pairs measured across it are noisier")  # fmt: skip
    say_notes([*summary.noise.speed.notes, *(n for n in summary.noise.notes if n.endswith(RERUN_NOTE_END))])
    return summary


@app.command("ab")
def ab_cmd(
    config: RunConfig,
    base: Annotated[
        str,
        typer.Option(
            metavar="SRC[@REF]", help="The reference build: a llama.cpp tree, @REF a git ref in it."
        ),
    ],
    head: Annotated[
        str,
        typer.Option(
            metavar="SRC[@REF]", help="The build under test, same form (@REF alone: the config's tree)."
        ),
    ],
    threshold: Threshold = f"{THRESHOLD:.0%}",
    metric: Annotated[
        list[str] | None,
        typer.Option(
            metavar="METRIC",
            help=f"{choices(', ')}; repeatable. Default: {', '.join(PAIRED_DEFAULT)}.",
        ),
    ] = None,
    fmt: TableFormat = Format.table,
    out: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Run folder (default results/<run-id>-ab/).")
    ] = None,
    set_: Sets = None,
    quiet: Quiet = False,
    allow_noisy: AllowNoisy = False,
    allow_output_change: Annotated[
        bool, typer.Option(help="Pass a greedy cell whose generated text changed (default: a fail).")
    ] = False,
    budget: Budget = None,
) -> None:
    """Run CONFIG with two builds interleaved (labels base, head), then gate head against base.

    Exit 0 pass/improved, 1 a fail, 2 bad input (config, refs, a build that does not compile),
    3 undecided (too noisy), 4 nothing to compare."""
    from specbench.base.paths import inside, results_dir
    from specbench.gate.ab import parse_build_spec
    from specbench.gate.regression import parse_threshold
    from specbench.results.folder import make_run_id

    thr = parse_threshold(threshold)
    specs = [("base", *parse_build_spec(base, "--base")), ("head", *parse_build_spec(head, "--head"))]
    for m in metric or []:
        check_metric(m)
    if out is None:
        out = inside(results_dir(), make_run_id(f"{config.stem}-ab"), what="run folder")
    with measuring_is_input():
        check_paths(("CONFIG", config), ("--out", out))
        typed = {"base": f"--base {base}", "head": f"--head {head}"}
        metrics = list(metric or PAIRED_DEFAULT)
        summary = run_builds(
            config, list(set_ or []), specs, out, quiet, metrics, thr, budget_s=budget, typed=typed
        )
    cmp = paired_from_run(
        out, "base", "head", metric, thr, allow_noisy=allow_noisy, allow_output_change=allow_output_change
    )
    if cmp.count(Status.TOO_NOISY):
        say(f"undecided cells: {rounds_end(summary, budget, failed=cmp.count(Status.FAIL) > 0)}", err=True)
    show(cmp, fmt)


@app.command("bisect")
def bisect_cmd(
    config: RunConfig,
    source: Annotated[Path, typer.Option(metavar="DIR", help="The llama.cpp git checkout to bisect.")],
    good: Annotated[str, typer.Option(metavar="REF", help="A commit known to be fast.")],
    bad: Annotated[str, typer.Option(metavar="REF", help="A later commit known to be slow.")],
    metric: Annotated[str, typer.Option(metavar="METRIC", help=f"{choices()}.")] = "spec_tps",
    threshold: Threshold = f"{THRESHOLD:.0%}",
    out: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Bisect folder (default results/bisect-<time>/)."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the bisect in --out: finished steps are reused.")
    ] = False,
    set_: Sets = None,
    quiet: Quiet = False,
    budget: Budget = None,
) -> None:
    """Find the first commit between --good and --bad that made METRIC slower: each step an
    interleaved A/B of the midpoint against --good (--bad is taken as slow, as in git bisect); a step
    that stays undecided there is measured against --bad, and is good if significantly faster than
    it. --budget is a step's. Exit 0 found, 2 bad input, 3 a step stayed undecided."""
    from specbench.base.paths import results_dir
    from specbench.gate import bisect
    from specbench.gate.regression import parse_threshold
    from specbench.plan.shards import config_hash
    from specbench.results.folder import check_writable, make_run_id

    check_metric(metric)
    thr = parse_threshold(threshold)
    if out is None:
        if resume:
            raise bisect.BisectError("--resume needs --out DIR: the folder of the bisect to continue")
        out = results_dir() / make_run_id("bisect")
    src = source.expanduser().resolve()
    with measuring_is_input():  # config, --set and --out are checked before any state is written
        check_paths(("CONFIG", config), ("--out", out))
        good_sha, _, _ = bisect.commit_range(src, good, bad)
        specs = [("base", str(src), good_sha), ("head", str(src), good_sha)]
        resolved = load_builds_config(config, list(set_ or []), specs)
        check_writable(out)
        ident = config_hash(resolved.model_dump(mode="json", exclude={"path", "base_dir"}))
        state = bisect.start(out, src, good, bad, metric, thr, resume, ident)
    say(
        f"bisect {metric}: {len(state.commits)} first-parent commits after {state.good[:10]} up to "
        f"{state.bad[:10]}; results in {out}"
    )

    def measure(
        base_sha: str, head_sha: str, run_dir: Path, budget_s: float | None, open_: frozenset[Status]
    ) -> bisect.Measured:
        specs = [("base", str(src), base_sha), ("head", str(src), head_sha)]
        with measuring_is_input():
            try:
                summary = run_builds(
                    config, list(set_ or []), specs, run_dir, quiet, [metric], thr, f"--resume --out {out}",
                    budget_s=budget_s, open_=open_,
                )  # fmt: skip
            except ConfigError as exc:  # a commit whose tree cannot run the config (another era's): which
                raise ConfigError(f"bisect step base {base_sha[:10]}, head {head_sha[:10]}: {exc}") from exc
        cmp = paired_from_run(run_dir, "base", "head", [metric], thr)
        failed = cmp.count(Status.FAIL) > 0
        return bisect.Measured(decisions=cmp.decisions, rounds_end=rounds_end(summary, budget, failed))

    def on_step(step: bisect.Step) -> None:
        commit = state.commits[step.index]
        say(
            f"step {state.steps.index(step) + 1}: {commit.short} {commit.subject[:60]}: "
            f"{_ratio(step)} {step.word} ({step.reason})"
        )
        if step.against_bad is not None:
            vs = step.against_bad
            said = "faster: good" if step.side == "good" else "not decided"
            say(f"  against --bad {state.bad[:10]}: {_ratio(vs)} {said} ({vs.reason})")

    state = bisect.run(out, state, measure, on_step, budget)
    lo, hi, stopped = state.bounds()
    found = state.first_bad
    if found is not None:
        say(f"first bad commit: {found.sha} {found.subject}")
        if state.bad_unmeasured:
            say(
                f"note: that is --bad itself, taken as slow and not measured (every commit before it "
                f"passed); `specbench ab {config} --base {src}@{state.good[:10]} "
                f"--head {src}@{found.short}` measures it"
            )
        by_bad = [str(i + 1) for i, step in enumerate(state.steps) if step.good_by_bad]
        if by_bad:
            say(
                f"note: step {', '.join(by_bad)} was good by being faster than --bad (its run against --good "
                f"stayed undecided): the commit named made it slower, and a smaller slowdown before it "
                f"is not excluded"
            )
        raise typer.Exit(0)
    after = state.commits[lo].short if lo >= 0 else state.good[:10]
    say(
        f"undecided: {f'step at {stopped.commit[:10]}' if stopped else 'a step'} could not be decided; "
        "the first bad commit is after "
        f"{after} and at or before {state.commits[hi].short} (--set max_repetitions=N or a longer --budget "
        "for more pairs, or a higher --threshold)"
    )
    raise typer.Exit(3)


def _ratio(step) -> str:
    """A step's (or its run against bad's) ratio and interval."""
    ratio = f"{step.ratio:.3f}" if step.ratio is not None else "-"
    return ratio + (f" [{step.ci_low:.3f}, {step.ci_high:.3f}]" if step.ci_low is not None else "")

"""`specbench run CONFIG`: build, fetch, sweep baseline vs speculative, keep every sample, print the table."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from specbench.cli.common import app, check_paths, echo, say, say_notes
from specbench.cli.options import Quiet, Sets
from specbench.cli.output import Format, TableFormat
from specbench.cli.session import RunSession
from specbench.results.folder import resume_command

DRY_RUN_SHOWN = 50  # invocations a dry run lists before it summarises the rest (--all: every one)
LONG_RUN_S = 3600.0  # a dry run whose estimate is beyond this warns


def _print_dry_run(prepared: Any, every: bool = False) -> None:
    from specbench.builder import toolkit
    from specbench.execute.preparation import PlannedModel

    for label, pv in prepared.build_previews.items():
        name = f"build {label}" if label is not None else "build"
        if pv.cached:
            say(f"# {name}: cached {pv.key} ({pv.backend}) in {prepared.builds[label].bin_dir}")
        else:
            say(f"# {name}: would build {pv.key} ({pv.backend}) from {pv.describe} into {pv.build_dir}")
            say(f"#   cmake args: {' '.join(pv.args)}")
            if missing := toolkit.backend_missing(pv.backend, pv.args):  # a run would refuse to build
                say(f"#   WARNING: this machine cannot build it: {'; '.join(missing)}")
    for name, m in prepared.models.items():
        if isinstance(m, PlannedModel):
            say(f"# model {name}: {m.source}  not cached (a run fetches or derives it)")
        else:
            commit = f"  commit {m.revision[:12]}" if m.revision else ""
            say(f"# model {name}: {m.source}  cached {m.path}  sha256 {m.sha256[:12]}{commit}")
    for pname, pair in prepared.config.pairs.items():
        check = prepared.pair_checks.get(pname)
        if pair.draft is None:
            verdict = f"method {pair.method}: no draft model to check"
        elif any(isinstance(prepared.models.get(n), PlannedModel) for n in (pair.target, pair.draft)):
            verdict = "not checked (models not cached)"
        elif check is None:  # an EAGLE-3/DFlash head or an MTP sidecar: no vocabulary of its own to compare
            verdict = "architecture fits its methods (vocabularies are compared for draft-simple only)"
        else:
            verdict = "ok" if check.ok else f"REFUSED: {check.message}"
        say(f"# pair {pname}: {pair.target} + {pair.draft or pair.method}: {verdict}")
    for line in prepared.plan.describe(limit=None if every else DRY_RUN_SHOWN):
        say(line)
    _print_estimate(prepared)


def _print_estimate(prepared: Any) -> None:
    """The dry run's last line: the plan's estimated time; loudly beyond an hour."""
    from specbench.gate.history import duration_text, plan_estimate

    plan = prepared.plan
    seconds, known = plan_estimate(prepared.build.backend).total(plan.invocations)
    rounds = " (the first round: repetitions: auto adds rounds until the precision is met)"
    say(
        f"# estimated time: {duration_text(seconds)} for {len(plan.invocations)} invocations "
        f"({known} from this machine's history, the others from their sizes)"
        + (rounds if prepared.config.auto_repetitions else "")
    )
    if seconds > LONG_RUN_S:
        say(f"warning: this run is estimated at {duration_text(seconds)}; narrow the sweep, the prompts or "
            "the repetitions, or cut it into shards (specbench plan --shards N)", err=True)  # fmt: skip


def _print_summary(summary: Any, report: Any, notes: list[str], fmt: Format = Format.table) -> None:
    """The closing table, as `specbench report` renders it (another ``fmt``: alone on stdout), then
    the closing words: each once, warnings first, at most ``SHOWN`` and a pointer to the rest."""
    from specbench.analysis import render
    from specbench.analysis.caveats import SHOWN, Severity
    from specbench.analysis.report import closing_caveats
    from specbench.cli.common import table_console, table_width

    if report is not None and fmt != Format.table:
        writer = {Format.md: render.markdown, Format.csv: render.csv_text}.get(fmt, render.json_text)
        echo(writer(report), nl=False)
    elif report is not None:  # logs and pipes: 200 columns, as `specbench report` prints it
        table_console.print(render.table(report, width=table_width()))
    say(f"results: {summary.run_dir}", err=fmt != Format.table)
    said = closing_caveats(summary, report, notes)  # each thing once, warnings first
    for c in said[:SHOWN]:
        say(c.line(), err=True)
    if len(said) > SHOWN:
        rest = said[SHOWN:]
        warned = sum(c.severity == Severity.WARNING for c in rest)
        say(
            f"note: {_left_out(len(rest), warned)}: `specbench report {summary.run_dir}` says them all",
            err=True,
        )


def _left_out(n: int, warned: int) -> str:
    """How many closing words were left out, as a reader says it ('1 more note')."""
    if warned:
        return f"{n} more ({warned} warning{'s' if warned > 1 else ''})"
    return f"{n} more note{'s' if n > 1 else ''}"


@app.command("run")
def run(
    config: Annotated[
        Path | None,
        typer.Argument(
            metavar="CONFIG",
            help="The run config (YAML), e.g. configs/quickstart.yaml; not needed with --resume.",
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Run folder (default: results/<run-id>/).")
    ] = None,
    set_: Sets = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help=f"Print the commands (the first {DRY_RUN_SHOWN}; --all every one), model and pair checks "
            "and the estimated time; run nothing.",
        ),
    ] = False,
    every: Annotated[bool, typer.Option("--all", help="With --dry-run: list every invocation.")] = False,
    resume: Annotated[
        Path | None,
        typer.Option(
            metavar="RUN_DIR",
            help="Continue this run folder, skipping finished samples (its manifest has the config).",
        ),
    ] = None,
    quiet: Quiet = False,
    fmt: TableFormat = Format.table,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict", help="Refuse to measure on a busy machine (another benchmark, GPU work, load)."
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="With --resume: continue a run made on another machine (the report then warns: mixed).",
        ),
    ] = False,
    shard: Annotated[
        str | None,
        typer.Option(
            metavar="I/N",
            help="Run only shard I of N (as `specbench plan --shards N` deals them; default: "
            "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT when set).",
        ),
    ] = None,
    no_workarounds: Annotated[
        bool,
        typer.Option(
            "--no-workarounds",
            help="Run each build as built, without the workaround its self-test found (e.g. repacking "
            "off on AMX CPUs): to reproduce the crash. Same as --set workarounds=false.",
        ),
    ] = False,
    shard_cells: Annotated[
        str | None,
        typer.Option(
            metavar="JSON",
            envvar="SPECBENCH_SHARD_CELLS",
            help="With --shard: the cells its `plan --shards` matrix entry lists (JSON), so every shard "
            "runs what the plan dealt (without it, the shard is dealt again from the plan's sizes).",
        ),
    ] = None,
) -> None:
    """Run a benchmark sweep: baseline vs speculative, every sample kept under results/."""
    from specbench.analysis.report import closing_report, nothing_measured
    from specbench.base.errors import InputError, RunError, SpecbenchError
    from specbench.execute import benchmark, preparation
    from specbench.gate.historydb import record_run
    from specbench.plan.config import load_config
    from specbench.results.runstate import check_not_tune
    from specbench.tune.calibrate import reuse_calibration

    check_paths(("CONFIG", config), ("--out", out), ("--resume", resume))
    if resume is not None and out is not None and out.resolve() != resume.resolve():
        raise InputError("--out and --resume name different folders; --resume RUN_DIR continues RUN_DIR")
    if resume is not None:
        check_not_tune(resume)
    sets = [*(set_ or []), *(["workarounds=false"] if no_workarounds else [])]
    if config is not None:
        cfg = load_config(config, sets)
    elif resume is not None:
        cfg = preparation.load_resumed(resume, sets)
    else:
        raise InputError(
            "give a CONFIG (e.g. configs/quickstart.yaml), or --resume RUN_DIR to continue a run"
        )
    part = _shard(shard, resume, shard_cells)
    session = RunSession(quiet)
    if dry_run:
        if resume is None:
            benchmark.new_run_dir(cfg, out)  # a name the real run would refuse is refused here too
        prepared = preparation.prepare(cfg, dry_run=True, build_progress=session.note, shard=part)
        if resume is not None:
            benchmark.left_to_run(prepared, resume, force)
        _print_dry_run(prepared, every)
        return
    session.run_dir = run_dir = resume if resume is not None else benchmark.new_run_dir(cfg, out)
    session.open_folder(resume is not None)
    if resume is not None:  # another machine: refuse before building
        benchmark.check_resume_machine(run_dir, force)
    prepared = session.prepare(cfg, shard=part)
    say_notes(prepared.plan.notes)  # before the first sample: a real run says what its dry run says

    def interrupted(exc) -> str:
        return (
            f"interrupted ({exc.reason}): {exc.kept} kept in {exc.run_dir}\n"
            f"resume with: {resume_command(exc.run_dir)}"
        )

    with session.measuring(interrupted) as view:
        summary = benchmark.run_benchmark(
            prepared,
            run_dir,
            resume=resume is not None,
            progress=view,
            command_line=["specbench", *sys.argv[1:]],
            strict=strict,
            force=force,
        )
    reuse_calibration(prepared, summary.run_dir)
    report, notes = closing_report(summary.run_dir)
    if resume is not None and summary.n_new == 0:
        notes.insert(0, f"{summary.run_dir}: every planned sample is recorded already; nothing was run")
    unrecorded = None
    try:
        record_run(summary.run_dir)
    except SpecbenchError as exc:  # a damaged or locked database: the run is kept all the same
        unrecorded = f"warning: {summary.run_dir} was not recorded in history: {exc}"
    _print_summary(summary, report, notes, fmt)
    if unrecorded is not None:
        say(unrecorded, err=True)
    why = nothing_measured(summary.run_dir, report)
    if why is not None:
        raise RunError(why)


def _shard(text: str | None, resume: Path | None, cells: str | None = None) -> Any:
    """The shard to run: --shard, the resumed run's own, or a Slurm array task's."""
    from specbench.base.errors import InputError
    from specbench.execute import benchmark
    from specbench.plan.shards import parse_shard, shard_from_env, with_cells

    if cells is not None and text is None and resume is None and shard_from_env() is None:
        raise InputError("--shard-cells goes with --shard I/N (the matrix entry's shard and cells)")
    asked = parse_shard(text) if text is not None else None
    if resume is not None:
        kept = benchmark.resumed_shard(resume)
        if asked is not None and asked != kept:
            raise InputError(
                f"{resume} measures shard {kept.label if kept else 'none (the whole plan)'}; "
                "resume it without --shard"
            )
        return kept
    if asked is None:
        asked = shard_from_env()
        if asked is not None:
            say(f"shard {asked.label} (from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT)", err=True)
    return with_cells(asked, cells) if asked is not None else None

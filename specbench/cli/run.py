"""`specbench run CONFIG`: build, fetch, sweep baseline vs speculative, keep every sample, print the table."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from specbench.cli.common import console, err_console
from specbench.results.folder import samples_path


def _fmt(mean: float | None, sd: float | None = None, digits: int = 1) -> str:
    if mean is None:
        return "-"
    return f"{mean:.{digits}f}" + (f" ± {sd:.{digits}f}" if sd is not None else "")


class ProgressView:
    """Renders runner progress on stderr: a rich bar with ETA and the last t/s on a terminal,
    one plain line per sample otherwise (logs, CI), nothing but warnings with ``--quiet``."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.tty = err_console.is_terminal
        self.bar: Any = None
        self.task: Any = None
        self.skipped = 0

    def __call__(self, event: Any) -> None:
        if self.quiet:
            return
        if self.tty:
            self._bar(event)
        elif event.kind in ("sample", "warmup"):
            self._line(event)

    def _bar(self, event: Any) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )  # fmt: skip

        if event.kind == "start":
            self.bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[tps]}"),
                console=err_console, transient=True,
            )  # fmt: skip
            self.task = self.bar.add_task("running", total=event.total, tps="")
            self.bar.start()
            return
        if self.bar is None:
            return
        if event.kind == "skipped":
            self.skipped += 1
            self.bar.update(self.task, total=event.total - self.skipped)
        elif event.kind == "begin":
            self.bar.update(self.task, description=event.invocation.label()[:60])
        else:
            tps = f"last {event.last_tps:.1f} t/s" if event.last_tps is not None else ""
            self.bar.update(self.task, advance=1, tps=tps)
            if event.sample is not None and event.sample.status != "ok":
                self.bar.console.print(self._describe(event), markup=False, highlight=False, soft_wrap=True)
        if event.done >= event.total:
            self.stop()

    def _describe(self, event: Any) -> str:
        s = event.sample
        what = event.invocation.label()
        if s is None:
            return f"[{event.done}/{event.total}] {what}: done"
        if s.status != "ok":
            return f"[{event.done}/{event.total}] {what}: {s.status.upper()}: {s.invalid_reason}"
        extra = f", acceptance {s.acceptance:.0%}" if s.acceptance is not None else ""
        return f"[{event.done}/{event.total}] {what}: {_fmt(s.tps, digits=2)} t/s{extra}"

    def _line(self, event: Any) -> None:
        err_console.print(self._describe(event), markup=False, highlight=False, soft_wrap=True)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _say(line: str, err: bool = False) -> None:
    """Print verbatim: no markup, no highlighting, no wrapping (command lines must stay copyable)."""
    (err_console if err else console).print(line, markup=False, highlight=False, soft_wrap=True)


def _print_dry_run(prepared: Any) -> None:
    from specbench.execute.benchmark import PlannedModel

    pv, build = prepared.build_preview, prepared.build
    if pv is not None and pv.cached:
        _say(f"# build: cached {pv.key} ({pv.backend}) in {build.bin_dir}")
    elif pv is not None:
        _say(f"# build: would build {pv.key} ({pv.backend}) from {pv.tree.path} into {pv.build_dir}")
        _say(f"#   cmake args: {' '.join(pv.args)}")
    for name, m in prepared.models.items():
        if isinstance(m, PlannedModel):
            _say(f"# model {name}: {m.source}  not cached (a run fetches or derives it)")
        else:
            _say(f"# model {name}: {m.source}  {m.path}  sha256 {m.sha256[:12]}")
    for pname, pair in prepared.config.pairs.items():
        check = prepared.pair_checks.get(pname)
        if pair.draft is None:
            verdict = f"method {pair.method}: no draft model to check"
        elif check is None:
            verdict = "not checked (models not cached)"
        else:
            verdict = "ok" if check.ok else f"REFUSED: {check.message}"
        _say(f"# pair {pname}: {pair.target} + {pair.draft or pair.method}: {verdict}")
    for line in prepared.plan.describe():
        _say(line)


def _print_summary(summary: Any, rows: list, notes: list[str]) -> None:
    from rich.table import Table

    table = Table(title=f"specbench run {summary.run_id}", title_justify="left")
    columns = ("pair", "method", "draft_max", "ngl/ngld", "baseline t/s", "spec t/s", "speedup", "acceptance",
               "outputs match", "valid")  # fmt: skip
    server = any(r.runner == "server" for r in rows)
    if server:  # per-request t/s above; what the server delivered in aggregate here
        columns += ("parallel", "throughput t/s", "ttft ms")
    for col in columns:
        table.add_column(col, justify="right" if col not in ("pair", "method") else "left")
    for r in rows:
        match = {True: "yes", False: f"NO (char {r.first_diff})", None: "-"}[r.outputs_match]
        extra = (str(r.parallel), _fmt(r.throughput_tps), _fmt(r.ttft_ms)) if server else ()
        table.add_row(
            r.pair or r.target, r.method, str(r.draft_max) if r.draft_max is not None else "-",
            f"{r.ngl if r.ngl is not None else '-'}/{r.ngld if r.ngld is not None else '-'}",
            _fmt(r.baseline_tps, r.baseline_tps_sd), _fmt(r.spec_tps, r.spec_tps_sd),
            f"{r.speedup:.2f}x" if r.speedup is not None else "-",
            f"{r.acceptance:.1%}" if r.acceptance is not None else "-", match,
            "yes" if r.valid else f"NO ({r.n_invalid} invalid, {r.n_failed} failed)", *extra,
        )  # fmt: skip
    out = console
    if not console.is_terminal:  # logs and pipes: 80 columns would squeeze the numbers into "27.…"
        from rich.console import Console

        out = Console(width=max(console.width, 160), no_color=True, highlight=False)
    out.print(table)
    console.print(f"results: {summary.run_dir}", markup=False, highlight=False, soft_wrap=True)
    if summary.n_failed or summary.n_invalid:
        err_console.print(f"warning: {summary.n_failed} failed and {summary.n_invalid} invalid samples; "
                          f"their reasons are in {samples_path(summary.run_dir)}", markup=False,
                          highlight=False, soft_wrap=True)  # fmt: skip
    for note in notes:
        err_console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)


def run(
    config: Annotated[Path, typer.Argument(help="The run config (YAML), e.g. configs/quickstart.yaml.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Run folder (default: results/<run-id>/).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Override a config value: KEY=VALUE with a dotted key (repeatable).",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print every command, model and pair check; run nothing.")
    ] = False,
    resume: Annotated[
        Path | None, typer.Option("--resume", help="Continue this run folder, skipping finished samples.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
) -> None:
    """Run a benchmark sweep: baseline vs speculative, every sample kept under results/."""
    from specbench.analysis.report import closing_rows
    from specbench.cli.models import _Bars  # the download bars of `specbench models pull`
    from specbench.errors import RunError, SpecbenchError
    from specbench.execute import benchmark
    from specbench.execute.runner import RunInterrupted
    from specbench.gate.history import record_run

    if resume is not None and out is not None and out.resolve() != resume.resolve():
        raise RunError("--out and --resume name different folders; --resume RUN_DIR continues RUN_DIR")
    cfg = benchmark.load(config, set_ or ())
    note = (lambda p: None) if quiet else _status_printer()
    if dry_run:
        _print_dry_run(benchmark.prepare(cfg, dry_run=True, build_progress=note))
        return
    run_dir = resume if resume is not None else benchmark.new_run_dir(cfg, out)
    fresh = not run_dir.exists()
    benchmark.prepare_run_dir(run_dir, resume is not None)  # unwritable or taken: fail before building
    bars = None if quiet else _Bars()
    try:
        prepared = benchmark.prepare(cfg, build_progress=note, model_progress=bars)
    except BaseException:
        if fresh and run_dir.is_dir() and not any(run_dir.iterdir()):
            run_dir.rmdir()
        raise
    finally:
        if bars is not None:
            bars.stop()
    view = ProgressView(quiet)
    _interrupt_on_termination()
    try:
        summary = benchmark.run_benchmark(
            prepared,
            run_dir,
            resume=resume is not None,
            progress=view,
            command_line=["specbench", *sys.argv[1:]],
        )
    except RunInterrupted as exc:
        view.stop()
        err_console.print(
            f"interrupted: {exc.n_kept} samples kept in {exc.run_dir}", markup=False, highlight=False
        )
        err_console.print(f"resume with: specbench run {config} --resume {exc.run_dir}", markup=False,
                          highlight=False, soft_wrap=True)  # fmt: skip
        raise typer.Exit(130) from None
    finally:
        view.stop()
    rows, notes = closing_rows(summary.run_dir)
    try:
        record_run(summary.run_dir)
    except SpecbenchError as exc:
        notes.append(f"not recorded in history: {exc}")
    _print_summary(summary, rows, notes)


def _interrupt_on_termination() -> None:
    """SIGTERM/SIGHUP end a run like Ctrl-C: llama.cpp runs in its own session, so without this a
    killed specbench would leave the benchmark binary running and the manifest saying ``running``."""
    import signal

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def _status_printer():
    def note(p: Any) -> None:
        if getattr(p, "done", None) is None:
            err_console.print(f"{p.phase}: {p.message}", markup=False, highlight=False, soft_wrap=True)

    return note


def register(app: typer.Typer) -> None:
    app.command("run")(run)

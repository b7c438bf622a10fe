"""`specbench tune CONFIG`: the fastest draft settings for a pair on this machine, measured."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from specbench.analysis.figures import Standing, speedup_text, standing_text
from specbench.base.errors import RunError, SpecbenchError
from specbench.cli.common import app, check_paths, say, say_notes, times
from specbench.cli.options import Quiet, Sets, budget_option
from specbench.cli.output import Format, chosen, format_option, print_json
from specbench.cli.session import RunSession, warn_busy


def result_json(result) -> dict:
    """The --json object: exactly the documented keys. ``speedup_range_*``: tune's interval widened to
    the speedup at the baseline levels of this machine's history; ``baseline_history``: those levels."""
    best, drift = result.best, result.drift
    low, high = (best.speedup_ci_low, best.speedup_ci_high) if best else (None, None)
    range_low, range_high = drift.widened(low, high) if drift is not None else (low, high)
    levels = ("runs", "low_tps", "high_tps", "tune_tps")
    return {
        "pair": result.pair,
        "best": asdict(best.setting) if best else None,
        "speedup": best.speedup if best else None,
        "speedup_ci_low": low,
        "speedup_ci_high": high,
        "standing": str(result.standing),
        "predicted_speedup": best.model_speedup if best else None,
        "command": result.command,
        "server_command": result.server_command,
        "candidates": [
            {"settings": asdict(c.setting), "model_speedup": c.model_speedup, "speedup": c.speedup}
            for c in result.candidates
        ],
        "elapsed_s": round(result.elapsed_s, 2),
        "speedup_range_low": range_low,
        "speedup_range_high": range_high,
        "baseline_history": {k: getattr(drift, k) for k in levels} if drift is not None else None,
    }


@app.command("tune")
def tune(
    config: Annotated[Path, typer.Argument(help="The run config (YAML), e.g. configs/quickstart.yaml.")],
    pair: Annotated[
        str | None, typer.Option(help="The pair to tune [default: the first with a draft].")
    ] = None,
    budget: Annotated[
        float, budget_option("Seconds (or 10m, 1h) to spend, calibration and measuring included; at least 1.")
    ] = 300.0,
    out: Annotated[Path | None, typer.Option(help="Run folder (default: results/<run-id>-tune/).")] = None,
    set_: Sets = None,
    max_draft: Annotated[int, typer.Option(help="Longest draft_max to consider.", min=1, max=64)] = 32,
    depth: Annotated[
        int | None,
        typer.Option(
            help="Tune for a context of this many tokens before each prompt "
            "(sweep.depth; default: the config's deepest).",
            min=0,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
    quiet: Quiet = False,
    fmt: Annotated[
        Format, format_option(Format.table, Format.json, help="table, or json: one object on stdout.")
    ] = Format.table,
) -> None:
    """Find the fastest draft settings: calibrate, predict every candidate, measure the best few."""
    from specbench.execute import benchmark
    from specbench.plan.config import load_config
    from specbench.results.calibration import load_calibration
    from specbench.tune.search import pick_pair, tune_config
    from specbench.tune.search import tune as run_tune

    as_json = chosen(fmt, as_json) == Format.json
    check_paths(("CONFIG", config), ("--out", out))
    if budget < 1:
        raise SpecbenchError(f"--budget {budget:g}: tune needs at least 1 second (e.g. 300, 5m)", exit_code=2)
    sets = [*(set_ or ()), *([f"sweep.depth=[{depth}]"] if depth is not None else [])]
    cfg = load_config(config, sets)
    name = pick_pair(cfg, pair)
    run_dir = out if out is not None else benchmark.new_run_dir(tune_config(cfg, name), None)
    note = (lambda line: None) if as_json or quiet else (lambda line: say(line, err=True))

    def interrupted(exc) -> str:  # Ctrl-C, SIGTERM, SIGHUP: the llama.cpp child is gone, the manifest says so
        if not exc.run_dir.is_dir():
            return f"interrupted ({exc.reason}) before anything was measured; nothing kept"
        cal = " and its calibration" if load_calibration(exc.run_dir) is not None else ""
        shows = f"specbench report {exc.run_dir} shows them" if exc.n_kept else "it recorded no sample yet"
        return f"interrupted ({exc.reason}): {exc.kept}{cal} kept in {exc.run_dir} ({shows})"

    with RunSession(as_json or quiet).measuring(interrupted) as view:
        result = run_tune(cfg, name, budget, run_dir, max_draft=max_draft, progress=view, note=note,
                          command_line=["specbench", *sys.argv[1:]])  # fmt: skip
    moved = "tune's rounds measured on either side of it are not comparable"
    warn_busy(result.noise, "tune's figures may be off", moved)
    notes = [*result.noise.notes, result.sentinel, result.cache_note, *result.history_notes]
    say_notes([line for line in notes if line])
    if as_json:
        print_json(result_json(result))
    else:
        _print(result)
    if result.best is None:  # a tune that measured nothing must not pass a CI job
        raise RunError(f"no setting could be measured; see the samples in {result.run_dir}")


def _x(c) -> str:
    """A measured speedup as the report writes it (a modelled one: common.times)."""
    return speedup_text(c.speedup, c.speedup_ci_low, c.speedup_ci_high, c.repetitions)


def _print(result) -> None:
    best = result.best
    say(f"tuned pair {result.pair} in {result.elapsed_s:.0f} s; run folder {result.run_dir}")
    for line in result.rounds:
        say(f"  {line}")
    measured = sorted((c for c in result.candidates if c.speedup is not None), key=lambda c: c.setting.key())
    for c in measured:
        modelled = times(c.model_speedup)
        say(f"  {c.setting.label(ngld=True)}: measured {_x(c)} ({c.n} samples), model {modelled}")
    if best is None:
        return
    s = best.setting
    say(
        f"best: draft_max {s.draft_max}, draft_min {s.draft_min}, p_min {s.p_min:g}, ngl {s.ngl}, "
        f"ngld {s.ngld}: {_x(best)} measured, {times(best.model_speedup)} modelled"
    )
    if result.standing != Standing.DECIDED:  # the fastest guess, not a figure
        say(
            f"  {standing_text(result.standing)}: the fastest survivor, not a decided best; a longer "
            "--budget measures it again"
        )
    drift = result.drift
    if drift is not None and drift.outside(best.speedup_ci_low, best.speedup_ci_high):
        low, high = drift.widened(best.speedup_ci_low, best.speedup_ci_high)
        say(
            f"  tune's baselines ran at {drift.tune_tps:.1f} t/s; {drift.runs} other run(s) of the same "
            f"baseline here measured {drift.low_tps:.1f}-{drift.high_tps:.1f} t/s, where this setting's "
            f"speedup would be {drift.speedup_low:.2f}-{drift.speedup_high:.2f}x if its speculative t/s "
            f"held: a later run here may measure anywhere in [{low:.2f}, {high:.2f}]"
        )
    if result.no_gain:
        say(f"no setting beats the baseline here; the model sees why: {result.no_gain}")
    say("llama-speculative-simple:")
    say(f"  {result.command}")
    say("llama-server:")
    say(f"  {result.server_command}")
    say(f"report: specbench report {result.run_dir}")

"""One measuring command's lifecycle for `run`, `ab`, `bisect` and `tune`: the run folder (removed
again if a refusal leaves it empty), the progress, an interruption, the busy-machine warnings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from specbench.cli.common import say
from specbench.cli.progress import DownloadBars, ProgressView, print_step
from specbench.machine.noise import NoiseRecord


class RunSession:
    """``quiet``: no progress. ``run_dir``: the folder measured into, when the command makes it."""

    def __init__(self, quiet: bool, run_dir: Path | None = None) -> None:
        self.quiet = quiet
        self.run_dir = run_dir
        self.made: Path | None = None  # the outermost folder this session made for run_dir
        self.note: Callable[[Any], None] = (lambda step: None) if quiet else print_step

    def open_folder(self, resume: bool) -> None:
        """Make (or check, to continue it) the run folder: unwritable or taken fails before building."""
        from specbench.base.paths import outermost_missing
        from specbench.execute import benchmark

        assert self.run_dir is not None
        self.made = outermost_missing(self.run_dir)
        benchmark.prepare_run_dir(self.run_dir, resume)

    def _remove_empty(self) -> None:
        from specbench.base.paths import remove_empty

        if self.run_dir is not None:
            remove_empty(self.run_dir, self.made)

    def prepare(self, cfg: Any, **options: Any) -> Any:
        """``preparation.prepare`` with progress; a refusal removes an empty folder this session made."""
        from specbench.execute import preparation

        bars = None if self.quiet else DownloadBars()
        try:
            return preparation.prepare(cfg, build_progress=self.note, model_progress=bars, **options)
        except BaseException:
            self._remove_empty()
            raise
        finally:
            if bars is not None:
                bars.stop()

    @contextmanager
    def measuring(self, interrupted: Callable[[Any], str]) -> Iterator[ProgressView]:
        """The samples' progress view; an interruption prints ``interrupted(exc)`` and exits with its code."""
        from specbench.execute.runner import RunInterrupted
        from specbench.machine.noise import BusyMachine

        view = ProgressView(self.quiet)
        try:
            yield view
        except RunInterrupted as exc:
            view.stop()
            say(interrupted(exc), err=True)
            raise typer.Exit(exc.exit_code) from None
        except BusyMachine:
            self._remove_empty()
            raise
        finally:
            view.stop()


def warn_busy(noise: NoiseRecord, busy: str, moved: str) -> None:
    """A busy machine and a moved machine speed, loudly, each with what it means for this command."""
    for reason in noise.busy:
        say(f"WARNING: busy machine: {reason}; {busy}", err=True)
    for warning in noise.speed.warnings:
        say(f"WARNING: {warning}; {moved}", err=True)

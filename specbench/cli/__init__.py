"""The command line. Thin: each command parses options, calls the library, prints the result.

One module per command group (as in huggingface_hub's ``hf``); each registers itself on ``app``.
Heavy libraries (scipy, matplotlib) are imported inside commands so ``--help`` stays fast.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable
from typing import Any

import typer

from specbench import __version__
from specbench.base import interrupts
from specbench.base.errors import SpecbenchError
from specbench.cli.common import say, state

app = typer.Typer(
    name="specbench",
    help="Benchmark speculative decoding in llama.cpp: build, fetch models, run sweeps, report, compare.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# Command-group modules, in the order they appear in --help. Each defines `register(app)`.
COMMAND_MODULES: list[str] = [
    "run", "plan", "merge", "tune", "drafts", "report", "compare", "history", "ab", "publish", "models",
    "build", "env", "parse", "schema",
]  # fmt: skip


def _version(value: bool) -> None:
    if value:
        typer.echo(f"specbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks for errors."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    state.debug = debug


for _name in COMMAND_MODULES:
    importlib.import_module(f"specbench.cli.{_name}").register(app)


def _interruptible(command: Callable[..., Any]) -> Callable[..., Any]:
    """Ctrl-C, SIGTERM or SIGHUP inside a command (specbench.base.interrupts): one line saying what was kept,
    exit 128 + the signal's number. Here, because typer turns any KeyboardInterrupt into a bare exit 130
    before ``main`` could see it. A command with more to say catches its own interruption first."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt as exc:
            kept = getattr(exc, "kept", None)
            say(f"interrupted ({interrupts.describe(exc)})" + (f": {kept}" if kept else ""), err=True)
            raise typer.Exit(interrupts.exit_code(exc)) from None

    return wrapper


def _wrap_commands(group: typer.Typer) -> None:
    for info in group.registered_commands:
        if info.callback is not None:
            info.callback = _interruptible(info.callback)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _wrap_commands(sub.typer_instance)


_wrap_commands(app)  # every command, the ones modules above register in the future included


def main() -> None:
    interrupts.install()  # SIGTERM/SIGHUP end every command as Ctrl-C does (specbench.base.interrupts)
    try:
        app()
    except SpecbenchError as exc:
        if state.debug or "--debug" in sys.argv:
            raise
        say(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except OSError as exc:  # a path the system refused that no check foresaw: still one line
        if state.debug or "--debug" in sys.argv:
            raise
        from specbench.base.paths import os_problem

        say(f"error: {os_problem(exc)}", err=True)
        sys.exit(1)
    except KeyboardInterrupt as exc:  # outside any command (options parsing): nothing to keep
        say(f"interrupted ({interrupts.describe(exc)})", err=True)
        sys.exit(interrupts.exit_code(exc))

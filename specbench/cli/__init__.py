"""The command line. Thin: each command parses options, calls the library, prints the result.

One module per command group (as in huggingface_hub's ``hf``); each registers itself on ``app``.
Heavy libraries (pandas, matplotlib) are imported inside commands so ``--help`` stays fast.
"""

from __future__ import annotations

import importlib
import sys

import typer

from specbench import __version__
from specbench.cli.common import err_console, state
from specbench.errors import SpecbenchError

app = typer.Typer(
    name="specbench",
    help="Benchmark speculative decoding in llama.cpp: build, fetch models, run sweeps, report, compare.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# Command-group modules, in the order they appear in --help. Each defines `register(app)`.
COMMAND_MODULES: list[str] = ["run", "tune", "report", "compare", "ab", "models", "build", "env", "parse"]


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


def main() -> None:
    try:
        app()
    except SpecbenchError as exc:
        if state.debug or "--debug" in sys.argv:
            raise
        err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except OSError as exc:  # a path the system refused that no check foresaw: still one line
        if state.debug or "--debug" in sys.argv:
            raise
        from specbench.paths import os_problem

        err_console.print(f"error: {os_problem(exc)}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt as exc:
        err_console.print(f"interrupted{f' by {exc}' if str(exc) else ''}", markup=False)
        sys.exit(getattr(exc, "exit_code", 130))

"""The command line. Thin: each command parses options, calls the library, prints the result.

One module per command group registers itself on ``app``; heavy libraries are imported inside
commands so ``--help`` stays fast.
"""

from __future__ import annotations

import errno
import functools
import importlib
import sys
from collections.abc import Callable
from typing import Any

import typer

from specbench import __version__
from specbench.base import interrupts
from specbench.base.errors import ExitCode, SpecbenchError
from specbench.cli.common import app, echo, say, state

# in --help's order; each registers its commands on `app` as it is imported
COMMAND_MODULES: list[str] = [
    "run", "plan", "tune", "drafts", "report", "compare", "history", "ab", "publish", "models", "build",
    "parse", "configs",
]  # fmt: skip


def _version(value: bool) -> None:
    if value:
        echo(f"specbench {__version__}")
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
    importlib.import_module(f"specbench.cli.{_name}")


def _interruptible(command: Callable[..., Any]) -> Callable[..., Any]:
    """Ctrl-C, SIGTERM or SIGHUP inside a command: one line saying what was kept, exit 128 + the
    signal's number (here, because typer turns a KeyboardInterrupt into a bare exit 130)."""

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


_wrap_commands(app)


# click's exceptions as typer raises them (typer 0.2x carries its own copy of click)
_click_errors = sys.modules[typer.BadParameter.__module__]


def _usage_line(exc: Any) -> str:
    """Click's own error as specbench's one line: ``specbench run: no such option: --foo (see
    specbench run --help)``."""
    message = exc.format_message().rstrip(".")
    message = message[:1].lower() + message[1:]
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return message
    return f"{ctx.command_path}: {message} (see {ctx.command_path} --help)"


def main() -> None:
    interrupts.install()  # SIGTERM/SIGHUP end every command as Ctrl-C does (specbench.base.interrupts)
    try:
        # not standalone: click's errors come here, to be said as specbench says its own
        code = app(standalone_mode=False)
    except _click_errors.ClickException as exc:
        no_args: Any = getattr(_click_errors, "NoArgsIsHelpError", None)  # click >= 8.2
        if no_args is not None and isinstance(exc, no_args):  # `specbench` or a group alone: its help
            exc.show()
        else:
            say(f"error: {_usage_line(exc)}", err=True)
        sys.exit(ExitCode.BAD_INPUT)
    except typer.Abort:  # end of input at a prompt
        say("error: aborted (no input)", err=True)
        sys.exit(ExitCode.FAILED)
    except SpecbenchError as exc:
        if state.debug or "--debug" in sys.argv:
            raise
        say(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except OSError as exc:  # a path the system refused that no check foresaw: still one line
        if exc.errno == errno.EPIPE:  # the reader went away (`| head`): nothing to say, nowhere to say it
            sys.exit(ExitCode.FAILED)
        if state.debug or "--debug" in sys.argv:
            raise
        from specbench.base.paths import os_problem

        say(f"error: {os_problem(exc)}", err=True)
        sys.exit(ExitCode.FAILED)
    except KeyboardInterrupt as exc:  # outside any command (options parsing): nothing to keep
        say(f"interrupted ({interrupts.describe(exc)})", err=True)
        sys.exit(interrupts.exit_code(exc))
    # a command's typer.Exit(n) comes back as n; a command that returned is done
    sys.exit(code if isinstance(code, int) and not isinstance(code, bool) else ExitCode.OK)

"""User-facing errors: one line that names the problem and what to do, and the exit codes.

Library code raises these; the CLI prints the message and exits non-zero without a traceback."""

from enum import IntEnum


class ExitCode(IntEnum):
    """One exit code per kind of outcome, the same in every command (docs: ``exit_code_rows``)."""

    OK = 0
    FAILED = 1
    BAD_INPUT = 2
    UNDECIDED = 3
    NOTHING = 4
    INTERRUPTED = 130

    @property
    def meaning(self) -> str:
        return _MEANINGS[self]


_MEANINGS = {
    ExitCode.OK: "done; a gate (`compare`, `ab`, `bisect`'s steps) passed",
    ExitCode.FAILED: "the work failed (a build, a download, a run that measured nothing, a sample log "
    "that cannot be written); a gate found a regression",
    ExitCode.BAD_INPUT: "what was given cannot be used: a usage error (an unknown option, a missing "
    "argument), an invalid config, a file or run folder that is missing or damaged, two runs that "
    "cannot be compared",
    ExitCode.UNDECIDED: "a gate: no regression, but a cell too noisy to decide (`--allow-noisy` passes it)",
    ExitCode.NOTHING: "a gate: a side has nothing to compare (an interrupted or empty run)",
    ExitCode.INTERRUPTED: "Ctrl-C (128 + the signal's number: 143 for SIGTERM, 129 for SIGHUP); "
    "finished samples are kept",
}


def exit_code_rows() -> list[str]:
    """The exit-code table as Markdown, as docs/troubleshooting.md shows it."""
    return ["| exit | meaning |", "| --- | --- |", *(f"| {c.value} | {c.meaning} |" for c in ExitCode)]


class SpecbenchError(Exception):
    """A problem the user can act on. ``exit_code`` is what the CLI exits with."""

    exit_code: int = ExitCode.FAILED

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(SpecbenchError):
    """What the user gave cannot be used: an option, a config, a missing or damaged file or folder."""

    exit_code = ExitCode.BAD_INPUT


class ConfigError(InputError):
    """The config (or a --set override) is invalid; the message names the YAML location."""


class BuildError(SpecbenchError):
    """Getting or building llama.cpp failed."""


class ModelError(SpecbenchError):
    """A model could not be fetched, verified, derived or paired."""


class ParseError(InputError):
    """A log holds nothing specbench recognises."""


class RunError(SpecbenchError):
    """A run cannot start or continue (lock held, results folder not writable...)."""


class UnreadableRun(RunError, InputError):
    """A run folder that cannot be read: bad input, which ``except RunError`` still catches."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C would be so the same clean-up runs (exit 128 + signum)."""

    def __init__(self, signal_name: str, signum: int):
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.exit_code = 128 + signum


class PathError(InputError):
    """A path or name the filesystem cannot hold or reach (too long, absent, unwritable)."""

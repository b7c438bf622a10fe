"""User-facing errors: one line that names the problem and what to do.

Library code raises these; the CLI prints the message and exits non-zero without a traceback
(``--debug`` shows it). Anything else reaching the CLI is a bug in specbench.
"""


class SpecbenchError(Exception):
    """A problem the user can act on. ``exit_code`` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(SpecbenchError):
    """The config (or a --set override) is invalid; the message names the YAML location."""


class BuildError(SpecbenchError):
    """Getting or building llama.cpp failed."""


class ModelError(SpecbenchError):
    """A model could not be fetched, verified, derived or paired."""


class ParseError(SpecbenchError):
    """A log holds nothing specbench recognises."""


class RunError(SpecbenchError):
    """A run cannot start or continue (lock held, results folder not writable...)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI cancel) or SIGHUP (a closed terminal), raised where Ctrl-C would be so the
    same clean-up runs; it names the signal, and the exit code is 128 + its number."""

    def __init__(self, signal_name: str, signum: int):
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.exit_code = 128 + signum


class PathError(SpecbenchError):
    """A path or name the filesystem cannot hold or reach (too long, absent, unwritable)."""

"""`specbench` from a test: in-process (typer's CliRunner around the real ``main``: its one-line
errors and exit codes, stdout and stderr apart) for options, messages and exit codes, or as a child
process where the process itself is the point (signals, what a child inherits, a real run's CLI)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from unittest import mock

from typer.testing import CliRunner


def invoke(
    *args, cwd: Path | None = None, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess:
    """``specbench ARGS`` in this process, as ``python -m specbench ARGS`` would run it: the same
    ``main`` (errors as one line on stderr, exit codes), with ``env`` set and ``cwd`` as the
    working folder for the call. No signal handlers are installed (pytest keeps its own), and
    COLUMNS is 80 unless ``env`` says otherwise, as for a child whose output is a pipe."""
    from specbench.base import interrupts
    from specbench.cli import main
    from specbench.cli.common import state

    argv = ["specbench", *map(str, args)]
    env = {"COLUMNS": "80", **(env or {})}
    code: int | str | None = 0
    runner = CliRunner()
    with (
        contextlib.chdir(cwd or os.getcwd()),
        mock.patch.object(sys, "argv", argv),
        mock.patch.object(interrupts, "install", lambda: None),
        runner.isolation(env=env) as (out, err, _),
    ):
        try:
            main()
        except SystemExit as exc:
            code = exc.code
        except Exception:  # what escapes main (--debug): Python prints the traceback and exits 1
            err.write(traceback.format_exc().encode())
            code = 1
        finally:
            state.debug = False
        if code is None:
            code = 0
        elif not isinstance(code, int):  # sys.exit("text"): Python prints it and exits 1
            err.write(f"{code}\n".encode())
            code = 1
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()  # closed after the block
    return subprocess.CompletedProcess(argv, code, stdout, stderr)


def _env(cwd: Path, env: Mapping[str, str] | None) -> dict[str, str | None]:
    # Results under the test's folder; no step summary unless the test sets one (pytest may run in CI).
    return {"GITHUB_STEP_SUMMARY": None, "SPECBENCH_RESULTS": str(cwd / "results"), **(env or {})}


def specbench(*args, cwd: Path, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """``specbench ARGS`` in-process, results under ``cwd/results`` (``timeout``: kept for the
    callers' symmetry with ``specbench_process``; an in-process call has none)."""
    return invoke(*args, cwd=cwd, env=_env(cwd, env))


def specbench_process(
    *args, cwd: Path, env: dict | None = None, timeout: int = 120
) -> subprocess.CompletedProcess:
    """``python -m specbench ARGS`` as a child process, results under ``cwd/results``."""
    full = {k: v for k, v in {**os.environ, **_env(cwd, env)}.items() if v is not None}
    return subprocess.run(
        [sys.executable, "-m", "specbench", *map(str, args)],
        cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )  # fmt: skip


HF_VARS = ("HF_HOME", "HF_HUB_CACHE", "HF_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT")


def specbench_hub_env(
    *args, cwd: Path, env: dict | None = None, timeout: int = 300
) -> subprocess.CompletedProcess:
    """``python -m specbench ARGS`` as a child whose Hugging Face variables are only ``env``'s: the
    hub library reads them when it is imported, so an in-process call could not change them."""
    full_env = {k: v for k, v in os.environ.items() if k not in HF_VARS}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "specbench", *map(str, args)],
        cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )  # fmt: skip

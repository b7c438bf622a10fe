"""Talking to CMake: a configured tree's executables, a step run with live progress, its error lines."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from itertools import takewhile
from pathlib import Path

from specbench.base import interrupts, lifeline
from specbench.base.childenv import child_env
from specbench.base.errors import BuildError
from specbench.base.redact import redact_argv

_NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]")
_MAKE_STEP = re.compile(r"^\[\s*(\d+)%\]")


@dataclass
class BuildProgress:
    """What the build is doing; ``done``/``total`` are set while compiling."""

    phase: str  # source | configure | build | probe | cached
    message: str
    done: int | None = None
    total: int | None = None


ProgressFn = Callable[[BuildProgress], None]


class CompileError(BuildError):
    """The compiler failed; ``details`` are the last error lines, ``log`` the full log."""

    def __init__(self, message: str, details: list[str], log: Path):
        super().__init__(message)
        self.details = details
        self.log = log


def cache_fits(cache: Path, src: Path, ninja: bool) -> bool:
    """Whether the build folder of ``cache`` (its CMakeCache.txt) was configured from ``src`` (not in
    place by an older specbench) with Ninja or not as asked: cmake refuses another ``-S`` or generator."""
    text = cache.read_text(errors="replace")
    home = re.search(r"^CMAKE_HOME_DIRECTORY:\w+=(.*)$", text, re.M)
    same_home = home is not None and Path(home[1].strip()).resolve() == src.resolve()
    return same_home and ("CMAKE_GENERATOR:INTERNAL=Ninja" in text) == ninja


def request_codemodel(build_dir: Path) -> None:
    """Ask CMake (file API, 3.14+) to describe the configured targets; works with every generator."""
    query = build_dir / ".cmake" / "api" / "v1" / "query" / "codemodel-v2"
    query.parent.mkdir(parents=True, exist_ok=True)
    query.touch()


def executable_targets(build_dir: Path) -> dict[str, Path | None]:
    """Executable targets of a configured tree and the binary each produces (file-API reply)."""
    reply = build_dir / ".cmake" / "api" / "v1" / "reply"
    indexes = sorted(reply.glob("index-*.json"))
    if not indexes:
        return {}
    index = json.loads(indexes[-1].read_text())
    model_file = next((o["jsonFile"] for o in index.get("objects", []) if o.get("kind") == "codemodel"), None)
    if model_file is None:
        return {}
    model = json.loads((reply / model_file).read_text())
    found: dict[str, Path | None] = {}
    for config in model.get("configurations", [])[:1]:
        for target in config.get("targets", []):
            detail = json.loads((reply / target["jsonFile"]).read_text())
            if detail.get("type") != "EXECUTABLE":
                continue
            artifacts = detail.get("artifacts") or []
            found[target["name"]] = (build_dir / artifacts[0]["path"]) if artifacts else None
    return found


def error_lines(log_text: str) -> list[str]:
    """The compiler/CMake error lines of a build log (a CMake error with its indented message)."""
    lines = log_text.splitlines()
    hits = []
    for i, line in enumerate(lines):
        if not re.search(r"\berror\b:|CMake Error|^FAILED:", line, re.I):
            continue
        text = line.rstrip()
        if "CMake Error" in line:  # its message: up to 4 of the indented lines that follow it
            block = takewhile(lambda ln: not ln.strip() or ln[:1].isspace(), lines[i + 1 : i + 12])
            text = " ".join([text, *[ln.strip() for ln in block if ln.strip()][:4]])
        hits.append(text)
    return hits


def parse_step(line: str) -> tuple[int, int] | None:
    m = _NINJA_STEP.match(line)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = _MAKE_STEP.match(line)
    return (int(m.group(1)), 100) if m else None


def stream_step(
    cmd: list[str], log: Path, progress: ProgressFn | None, phase: str, base_env: dict[str, str] | None = None
) -> int:
    """Run a build step, appending its output to the log and reporting ninja/make steps."""
    env = {**child_env(base_env), "NINJA_STATUS": "[%f/%t] "}  # no secrets in the build log
    with log.open("a", encoding="utf-8", errors="replace") as out:
        out.write(f"$ {' '.join(redact_argv(cmd))}\n")  # a cmake -D value may hold a URL
        out.flush()
        interrupts.child_starting()
        try:  # its own session: on Ctrl-C/SIGTERM the whole group goes (cmake, ninja, every compiler)
            proc = lifeline.popen(  # and it dies with specbench, even a kill -9'd one (lifeline)
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                errors="replace",
                env=env,
            )
        except OSError as exc:
            interrupts.child_started()
            raise BuildError(f"cannot run {cmd[0]}: {exc}") from exc
        except BaseException:
            interrupts.child_started()
            raise
        assert proc.stdout is not None
        try:
            interrupts.child_started()  # a signal that came while it started: the group is killed below
            for line in proc.stdout:
                out.write(line)
                out.flush()  # the log is complete up to the moment of any crash
                step = parse_step(line)
                if progress and step:
                    progress(BuildProgress(phase, line.strip()[:120], *step))
        except BaseException:
            _kill_group(proc)
            raise
        code = proc.wait()
        lifeline.forget(proc)
        return code


def _kill_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM the step's process group, then SIGKILL what is left after ``grace_s``: on SIGTERM ninja
    kills its compiles' own process groups, which a SIGKILL would leave compiling. The leader is reaped
    last, so its pid cannot have been reused."""
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    lifeline.forget(proc)


def first_error(details: list[str]) -> str:
    """The line that names the cause: the first compiler ``error:`` (what follows is often fallout),
    else the first CMake error, else the first ``FAILED:`` step."""
    for pattern in (r"\berror\b:", r"CMake Error", r"^FAILED:"):
        hit = next((d.strip() for d in details if re.search(pattern, d, re.I)), None)
        if hit:
            return hit
    return "no error line found"


def compile_failure(what: str, log: Path) -> CompileError:
    every = error_lines(log.read_text(errors="replace"))
    return CompileError(f"{what} failed ({first_error(every)}); full log: {log}", every[-8:], log)


def find_binary(build_dir: Path, name: str, artifact: Path | None) -> Path | None:
    for cand in (artifact, build_dir / "bin" / name, build_dir / "bin" / "Release" / name):
        if cand is not None and cand.is_file():
            return cand
    return next((p for p in build_dir.rglob(name) if p.is_file() and os.access(p, os.X_OK)), None)


def compiler_version(build_dir: Path) -> str:
    """First line of ``--version`` of the C++ compiler CMake chose."""
    try:
        cache = (build_dir / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        cache = ""
    m = re.search(r"^CMAKE_CXX_COMPILER:\w+=(.+)$", cache, re.M)
    exe = m.group(1).strip() if m else (shutil.which("c++") or "")
    if not exe:
        return ""
    try:
        out = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return exe
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0] if first else exe


def generator() -> list[str]:
    return ["-G", "Ninja"] if shutil.which("ninja") else []

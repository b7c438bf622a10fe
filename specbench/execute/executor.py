"""The executor seam: executors launch, the judge judges.

The runner loop owns order, resume, progress and the results folder; an executor only runs a batch
of invocations and reports what each gave as an ``Outcome`` for the one ``judge``. The process and
the server executors plug in the same way without the loop, the judge or the store knowing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from specbench.base.errors import ParseError
from specbench.execute.judge import Outcome
from specbench.execute.outputs import decode_output, echoed_on_stdout, failure_reason
from specbench.execute.process import Command, ProcessResult, run_together
from specbench.parse.crash import CrashFacts
from specbench.parse.process import ParsedLog, parse_text, without_loading_noise
from specbench.parse.span import format_stamps
from specbench.results.folder import raw_paths, write_raw

if TYPE_CHECKING:
    from specbench.plan.invocation import Invocation

_MAX_LOG_READ = 8 << 20  # stdout/stderr beyond this are not parsed (a runaway log is a failure anyway)


class Executor(Protocol):
    """Runs a batch of ``(raw file number, invocation)`` pairs (in flight together, or a pair) and
    returns their outcomes in order; ``close`` releases what it holds (servers). ``model_loads``
    counts the llama.cpp processes it started that loaded a model, warmups included."""

    model_loads: int

    def run(self, batch: list[tuple[int, Invocation]], run_dir: Path) -> list[Outcome]: ...

    def close(self) -> None: ...


def raw_stem(index: int, inv: Invocation) -> str:
    """``<n>-<role>[-<build>]-<model>-<method>-<draft_max>-<prompt>-r<rep>`` (warmups say so)."""
    role = "warmup" if inv.warmup else inv.role
    parts = [f"{index:04d}", role, *([inv.build] if inv.build else []), inv.model]
    if inv.role == "speculative":
        parts += [inv.draft or inv.method] + ([f"n{inv.draft_max}"] if inv.draft_max is not None else [])
    parts += [inv.prompt_id, f"r{inv.repetition}"]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(str(p) for p in parts))[:60]


def read_log(path: Path) -> str:
    with open(path, "rb") as fh:
        return fh.read(_MAX_LOG_READ).decode("utf-8", errors="replace")


def read_output(path: Path) -> str:
    """stdout, the generated text, byte-exact (see ``outputs.decode_output``)."""
    with open(path, "rb") as fh:
        return decode_output(fh.read(_MAX_LOG_READ))


def _parse(stderr: str, stdout: str, name: str) -> ParsedLog | None:
    """Statistics are on stderr; stdout (generated text, which could say anything) only as a
    fallback, for builds that print them there."""
    for text in (stderr, stderr + "\n" + stdout):
        try:
            return parse_text(text, file=name)
        except ParseError:
            continue
    return None


class ProcessExecutor:
    """One llama.cpp process per invocation: stdout/stderr to raw logs, statistics parsed from them."""

    def __init__(self, facts: CrashFacts | None = None) -> None:
        self.model_loads = 0
        self.facts = facts  # what names a crash's cause beside its log (specbench.parse.crash)

    def run(self, batch: list[tuple[int, Invocation]], run_dir: Path) -> list[Outcome]:
        """Processes run one at a time (the config refuses parallel > 1 for this runner)."""
        return [
            self._outcome(inv, run_together([self._command(inv, index, run_dir)])[0], run_dir)
            for index, inv in batch
        ]

    def _command(
        self, inv: Invocation, index: int, run_dir: Path, cpus: frozenset[int] | None = None
    ) -> Command:
        stdout_path, stderr_path = raw_paths(run_dir, raw_stem(index, inv))
        self.model_loads += 1
        # stdout time-stamped: llama-completion's generation is timed from it (parse.span), and a
        # speculative program without a step log is cut at n_predict from it (judge.capped_span)
        return Command(list(inv.argv), stdout_path, stderr_path, inv.timeout_s, True, cpus)

    def _outcome(self, inv: Invocation, res: ProcessResult, run_dir: Path) -> Outcome:
        stdout_path, stderr_path = res.stdout_path, res.stderr_path
        if res.stdout_times is not None:
            write_raw(stdout_path.with_suffix(".times"), format_stamps(res.stdout_times))
        stdout, stderr = read_output(res.stdout_path), read_log(res.stderr_path)
        if inv.role == "speculative" and stderr and stderr_path.stat().st_size < _MAX_LOG_READ:
            stderr, dropped = without_loading_noise(stderr)  # -lv 5 (the step log) prints each tensor too
            if dropped:
                note = f"{dropped} model-loading debug lines (create_tensor, graph inputs) left out"
                write_raw(stderr_path, f"{stderr}specbench: {note}\n")
        error = None
        if res.timed_out:
            error = f"timed out after {inv.timeout_s:g} s (process group killed)"
        elif res.exit_code != 0:
            error = failure_reason(stderr, res.exit_code, res.signal, self.facts, inv.generation.ctx_size)
        log = None  # a process that exited with a code printed its statistics, a failed one's are kept
        if res.exit_code is not None:
            log = _parse(stderr, stdout, str(stderr_path.relative_to(run_dir)))
        return Outcome(
            wall_s=res.wall_s, error=error, timed_out=res.timed_out, output=stdout,
            echoed=echoed_on_stdout(stdout, stderr, inv.prompt_text, inv.prompt_echoed),
            log=log, exit_code=res.exit_code, stdout_path=str(stdout_path.relative_to(run_dir)),
            stderr_path=str(stderr_path.relative_to(run_dir)), stdout_times=res.stdout_times,
            cpu_s=res.cpu_s,
        )  # fmt: skip

    def close(self) -> None:
        pass


class DuetExecutor(ProcessExecutor):
    """``pairing: duet`` (``plan.pairing``): a pair's two processes start together, each pinned to
    its own CPU set. Which build gets which set alternates with the repetition and the prompt, so
    every cell has each build on each set equally often (a faster CPU cancels); a pair measured
    again, a resumed run and a warmup (run alone) get the same set as their pair's first run."""

    def __init__(
        self,
        cpu_sets: list[list[int]],
        labels: list[str | None],
        facts: CrashFacts | None = None,
        prompts: list[str] | None = None,
    ):
        super().__init__(facts)
        self.sets = [frozenset(c) for c in cpu_sets]
        self.labels = labels
        self.prompts = prompts or []

    def _cpus(self, inv: Invocation) -> frozenset[int]:
        side = self.labels.index(inv.build) if inv.build in self.labels else 0
        slot = self.prompts.index(inv.prompt_id) if inv.prompt_id in self.prompts else 0
        return self.sets[(side + inv.repetition + slot) % len(self.sets)]

    def run(self, batch: list[tuple[int, Invocation]], run_dir: Path) -> list[Outcome]:
        commands = [self._command(inv, index, run_dir, self._cpus(inv)) for index, inv in batch]
        together = len(batch) == len(self.sets) and not any(inv.warmup for _, inv in batch)  # a pair
        results = run_together(commands) if together else [run_together([c])[0] for c in commands]
        return [self._outcome(inv, res, run_dir) for (_, inv), res in zip(batch, results, strict=True)]

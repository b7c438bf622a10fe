"""Execute a plan and keep every sample: the measurement loop behind ``specbench run``.

Each invocation runs to completion (or timeout), its stdout/stderr land in ``raw/``, and its
sample is appended to samples.jsonl and fsynced before the next one starts, so a crash, a full
disk or Ctrl-C loses at most the invocation in flight. A failed or invalid sample is recorded
with its reason and the run goes on: a benchmark reports what happened, it does not stop at the
first bad cell. Warmups run but are never recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.errors import ParseError, RunError, SpecbenchError
from specbench.manifest import Manifest, now_iso
from specbench.outputs import compare, continuation, failure_reason, sha256_text
from specbench.parse import ParsedLog, parse_text
from specbench.process import ProcessResult, run_command
from specbench.rundir import RAW, RunLock, check_fresh, check_writable
from specbench.store import SAMPLES, Measurement, Sample, append_sample, load_samples

if TYPE_CHECKING:
    from specbench.plan import Invocation

_MAX_LOG_READ = 8 << 20  # stdout/stderr beyond this are not parsed (a runaway log is a failure anyway)


class RunInterrupted(RunError):
    """Ctrl-C: finished samples are kept, the manifest says ``interrupted``; exit 130."""

    exit_code = 130

    def __init__(self, run_dir: Path, n_kept: int):
        super().__init__(f"interrupted; {n_kept} samples kept in {run_dir}")
        self.run_dir = run_dir
        self.n_kept = n_kept


@dataclass
class ProgressEvent:
    """What the CLI needs to draw progress; ``sample`` is None for warmups and skipped samples."""

    kind: str  # start | begin | warmup | sample | skipped
    done: int  # invocations finished (or skipped) so far, warmups included
    total: int  # invocations in the plan
    invocation: Invocation | None = None
    sample: Sample | None = None
    last_tps: float | None = None


ProgressFn = Callable[[ProgressEvent], None]


@dataclass
class RunResult:
    """What executing a plan produced (the table comes from specbench.report over the run folder)."""

    run_dir: Path
    run_id: str
    status: str
    samples: list[Sample] = field(default_factory=list)  # every sample of the run, resumed ones too
    n_new: int = 0  # samples recorded by this invocation of the runner


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:60]


def raw_stem(index: int, inv: Invocation) -> str:
    """``raw/<n>-<role>-<model>-<method>-<draft_max>-<prompt>-r<rep>`` (warmups say so)."""
    role = "warmup" if inv.warmup else inv.role
    parts = [f"{index:04d}", role, inv.model]
    if inv.role == "speculative":
        parts += [inv.draft or inv.method, f"n{inv.draft_max}"]
    parts += [inv.prompt_id, f"r{inv.repetition}"]
    return _slug("-".join(str(p) for p in parts))


def _read(path: Path) -> str:
    with open(path, "rb") as fh:
        return fh.read(_MAX_LOG_READ).decode("utf-8", errors="replace")


def derive_metrics(role: str, log: ParsedLog) -> tuple[float | None, float | None, float | None, int | None]:
    """(decode t/s, acceptance, tokens per target pass, tokens generated) from a parsed log.

    Speculative: the ``decoded`` line (the target's eval line counts only non-verification
    passes). Baseline/draft: the target's ``eval`` t/s; tokens generated = eval runs + the token
    sampled from the prompt pass, the same count ``n_predict`` gives for speculative runs.
    """
    if role == "speculative":
        tps = log.decoded.tps if log.decoded else None
        acceptance = log.n_accept / log.n_drafted if log.n_drafted and log.n_accept is not None else None
        tpp = None
        if log.n_predict is not None and log.n_accept is not None and log.n_predict - log.n_accept > 0:
            tpp = log.n_predict / (log.n_predict - log.n_accept)
        n_gen = log.n_predict if log.n_predict is not None else (log.decoded.tokens if log.decoded else None)
        return tps, acceptance, tpp, n_gen
    perf = log.perf.target if log.perf else None
    tps = perf.eval_tps if perf else None
    n_gen = perf.eval_runs + 1 if perf and perf.eval_runs is not None else None
    return tps, None, None, n_gen


def _finite(x: float | None) -> float | None:
    return x if x is not None and x == x and abs(x) != float("inf") else None


@dataclass
class _Outputs:
    """Continuations of finished baseline samples, to compare speculative ones against."""

    by_rep: dict[tuple, str] = field(default_factory=dict)  # (model, prompt, ngl, rep) -> text
    any_rep: dict[tuple, str] = field(default_factory=dict)  # (model, prompt, ngl) -> first text

    def add(self, model: str, prompt_id: str, ngl: int | None, rep: int, text: str) -> None:
        self.by_rep[(model, prompt_id, ngl, rep)] = text
        self.any_rep.setdefault((model, prompt_id, ngl), text)

    def get(self, model: str, prompt_id: str, ngl: int | None, rep: int) -> str | None:
        """The same repetition's baseline; else any repetition's (at temperature 0 they agree)."""
        return self.by_rep.get((model, prompt_id, ngl, rep), self.any_rep.get((model, prompt_id, ngl)))


def _parse(stderr: str, stdout: str, name: str) -> ParsedLog | None:
    """Statistics are on stderr; stdout (generated text, which could say anything) only as a
    fallback, for builds that print them there."""
    for text in (stderr, stderr + "\n" + stdout):
        try:
            return parse_text(text, file=name)
        except ParseError:
            continue
    return None


def _continuation_of(inv: Invocation, stdout: str) -> str | None:
    return continuation(stdout, inv.prompt_text, echoed=inv.prompt_echoed)


def build_sample(
    inv: Invocation, res: ProcessResult, run_id: str, run_dir: Path, started_at: str, outputs: _Outputs
) -> Sample:
    """Judge one finished invocation: status, validity and reason, metrics, output comparison."""
    stdout, stderr = _read(res.stdout_path), _read(res.stderr_path)
    status, reason, log = "ok", None, None
    tps = acceptance = tpp = None
    n_gen = None
    if res.timed_out:
        status, reason = "timeout", f"timed out after {inv.timeout_s:g} s (process group killed)"
    elif res.exit_code != 0:
        status, reason = "failed", failure_reason(stderr, res.exit_code, res.signal)
    if status == "ok" or res.exit_code not in (None, 0):
        log = _parse(stderr, stdout, str(res.stderr_path.relative_to(run_dir)))
        if log is None and status == "ok":
            status, reason = "failed", "no statistics in output"
    if log is not None and status == "ok":
        tps, acceptance, tpp, n_gen = derive_metrics(inv.role, log)
        tps, acceptance, tpp = _finite(tps), _finite(acceptance), _finite(tpp)
        if inv.role == "speculative" and log.kind != "speculative":
            status, reason = "failed", "no speculative statistics in output"
        elif inv.role == "speculative" and not log.n_drafted:
            status, reason = "invalid", "speculation never engaged (n_drafted = 0)"
        elif tps is None:
            status, reason = "failed", "no decode speed in the statistics"
    text = _continuation_of(inv, stdout) if status in ("ok", "invalid") else None
    match = first_diff = None
    if text is not None and inv.generation.temperature == 0:
        if inv.role == "baseline":
            outputs.add(inv.model, inv.prompt_id, inv.ngl, inv.repetition, text)
        elif inv.role == "speculative":
            base = outputs.get(inv.model, inv.prompt_id, inv.ngl, inv.repetition)
            if base is not None:
                cmp = compare(text, base)
                match, first_diff = cmp.match, cmp.first_diff
    return Sample(
        **inv.model_dump(include=set(Measurement.model_fields)),
        run_id=run_id, status=status, valid=status == "ok", invalid_reason=reason, metrics=log, tps=tps,
        acceptance=acceptance, tokens_per_pass=tpp, n_generated=n_gen, outputs_match=match,
        first_diff=first_diff, output_sha256=sha256_text(text) if text is not None else None,
        exit_code=res.exit_code if res.exit_code is not None else None, wall_s=round(res.wall_s, 4),
        cmd=list(inv.argv), stdout_path=str(res.stdout_path.relative_to(run_dir)),
        stderr_path=str(res.stderr_path.relative_to(run_dir)), started_at=started_at,
    )  # fmt: skip


def _recover_outputs(
    samples: Sequence[Sample], plan: Sequence[Invocation], run_dir: Path, outputs: _Outputs
) -> None:
    """On --resume, baseline continuations of earlier samples come back from their raw stdout."""
    by_key = {inv.sample_key(): inv for inv in plan if not inv.warmup}
    for s in samples:
        inv = by_key.get(s.sample_key())
        if s.role != "baseline" or s.status != "ok" or inv is None or not s.stdout_path:
            continue
        path = run_dir / s.stdout_path
        if path.is_file():
            text = _continuation_of(inv, _read(path))
            if text is not None:
                outputs.add(s.model, s.prompt_id, s.ngl, s.repetition, text)


def prepare_run_dir(run_dir: Path, resume: bool) -> None:
    """Before anything runs: the folder is writable, and new runs do not reuse a run's folder."""
    if resume:
        if not (run_dir / SAMPLES).is_file() and not (run_dir / "manifest.json").is_file():
            raise RunError(f"{run_dir} is not a run folder to resume (no samples.jsonl or manifest.json)")
    check_writable(run_dir)
    if not resume:
        check_fresh(run_dir)


def execute(
    plan: Sequence[Invocation],
    run_dir: Path,
    manifest: Manifest,
    progress: ProgressFn | None = None,
    resume: bool = False,
) -> RunResult:
    """Run every invocation of ``plan`` in order, recording samples in ``run_dir``.

    With ``resume``, samples already in samples.jsonl are skipped (warmups run again, once, if
    anything is left to measure). Raises RunInterrupted on Ctrl-C, RunError when results cannot
    be written; either way the manifest records how the run ended.
    """
    run_dir = Path(run_dir)
    prepare_run_dir(run_dir, resume)
    notify = progress or (lambda event: None)
    with RunLock(run_dir):
        done_samples = load_samples(run_dir) if resume and (run_dir / SAMPLES).is_file() else []
        done = {s.sample_key() for s in done_samples}
        if resume:
            manifest.resumed_at.append(now_iso())
        manifest.plan_size = len(plan)
        manifest.n_samples_planned = sum(not inv.warmup for inv in plan)
        manifest.status, manifest.finished_at, manifest.status_reason = "running", None, None
        manifest.save(run_dir)
        (run_dir / RAW).mkdir(exist_ok=True)
        outputs = _Outputs()
        _recover_outputs(done_samples, plan, run_dir, outputs)
        new: list[Sample] = []
        left = sum(not inv.warmup and inv.sample_key() not in done for inv in plan)
        total, count, last_tps = len(plan), 0, None
        notify(ProgressEvent("start", 0, total))
        try:
            for index, inv in enumerate(plan):
                if (inv.warmup and left == 0) or (not inv.warmup and inv.sample_key() in done):
                    count += 1
                    notify(ProgressEvent("skipped", count, total, inv, last_tps=last_tps))
                    continue
                notify(ProgressEvent("begin", count, total, inv, last_tps=last_tps))
                stem = raw_stem(index, inv)
                started = now_iso()
                res = run_command(
                    list(inv.argv), run_dir / RAW / f"{stem}.stdout", run_dir / RAW / f"{stem}.stderr",
                    timeout_s=inv.timeout_s,
                )  # fmt: skip
                count += 1
                if inv.warmup:
                    notify(ProgressEvent("warmup", count, total, inv, last_tps=last_tps))
                    continue
                sample = build_sample(inv, res, manifest.run_id, run_dir, started, outputs)
                append_sample(run_dir, sample)
                new.append(sample)
                left -= 1
                last_tps = sample.tps if sample.tps is not None else last_tps
                notify(ProgressEvent("sample", count, total, inv, sample, last_tps))
        except KeyboardInterrupt:
            _finish(manifest, run_dir, "interrupted", "Ctrl-C")
            raise RunInterrupted(run_dir, len(done_samples) + len(new)) from None
        except SpecbenchError as exc:
            _finish(manifest, run_dir, "failed", str(exc))
            raise
        except BaseException as exc:
            _finish(manifest, run_dir, "failed", f"{type(exc).__name__}: {exc}")
            raise
        _finish(manifest, run_dir, "complete", None)
    return RunResult(run_dir, manifest.run_id, "complete", [*done_samples, *new], len(new))


def _finish(manifest: Manifest, run_dir: Path, status: str, reason: str | None) -> None:
    """Record how the run ended; a manifest that cannot be written (disk full) must not hide why."""
    try:
        manifest.finish(run_dir, status, reason)  # type: ignore[arg-type]
    except RunError:
        pass

"""Execute a plan and keep every sample: the measurement loop behind ``specbench run``.

An executor runs each invocation (a batch: the server runner's ``parallel`` requests, or a pair)
and reports what it gave; the one judge turns that into a sample, appended to the run folder and
fsynced before the next one starts, so a crash, a full disk or Ctrl-C loses at most what is in
flight. A failed or invalid sample is recorded with its reason and the run goes on. A failed warmup
drops the cells that need its model or setting (recorded ``failed``, not run); with none left the
run stops before measuring.

The process runner's batch is a pair: the builds' runs of one cell, prompt and repetition, back to
back (or at once in duet pairs), measured again together when one did not get its share of the CPU
(``machine.contention`` judges the share; here it is read off each outcome). The server runner's
batch is its ``parallel`` requests in flight together.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.base.errors import RunError, SpecbenchError
from specbench.base.formats import now_iso
from specbench.builder.workaround import crash_facts as build_crash_facts
from specbench.execute.executor import DuetExecutor, Executor, ProcessExecutor, raw_stem, read_output
from specbench.execute.judge import Measured, Outcome, judge
from specbench.execute.outputs import compare, continuation, generated_text
from specbench.execute.server_executor import ServerExecutor
from specbench.machine import contention, noise
from specbench.parse.crash import CrashFacts
from specbench.results.cell import baseline_of, cell_record, is_synthetic
from specbench.results.folder import (
    check_writable,
    has_samples,
    mark_orphans,
    mark_partial,
    next_raw_number,
    prepare_raw,
    samples_path,
)
from specbench.results.manifest import Manifest, Status
from specbench.results.manifestfile import save_manifest
from specbench.results.records import Measurement, Sample
from specbench.results.runlock import RunLock
from specbench.results.runstate import check_fresh, check_resumable
from specbench.results.samplelog import append_sample, load_samples

if TYPE_CHECKING:
    from specbench.plan.invocation import Invocation, Plan


class RunInterrupted(RunError):
    """Ctrl-C, SIGTERM or SIGHUP: finished samples are kept, the manifest says ``interrupted``
    with the reason; exit 130 (Ctrl-C) or 128 + the signal's number."""

    exit_code = 130

    def __init__(self, run_dir: Path, n_kept: int, reason: str = "Ctrl-C", exit_code: int = 130):
        self.kept = f"{n_kept} sample{'' if n_kept == 1 else 's'}"  # what the CLIs say was kept
        super().__init__(f"interrupted ({reason}); {self.kept} kept in {run_dir}", exit_code)
        self.run_dir, self.n_kept, self.reason = run_dir, n_kept, reason


@dataclass
class ProgressEvent:
    """What the CLI needs to draw progress; ``sample`` is None for warmups and skipped samples."""

    kind: str  # start | begin | warmup (its judged sample: not recorded) | sample | skipped | dropped
    done: int  # invocations finished (or skipped) so far, warmups included
    total: int  # invocations in the plan
    invocation: Invocation | None = None
    sample: Sample | None = None
    last_tps: float | None = None
    message: str | None = None  # dropped: the one line naming the cells a failed warmup took out


ProgressFn = Callable[[ProgressEvent], None]
ExtendFn = Callable[[list[Sample]], Sequence["Invocation"]]  # all samples so far -> more to run ([]: done)
ObserveFn = Callable[[str, int], object]  # (phase: before | during | after, samples so far); result unread


@dataclass
class RunResult:
    """What executing a plan produced (the table comes from specbench.analysis.report over the run folder)."""

    samples: list[Sample]  # every sample of the run, resumed ones too
    n_new: int  # samples recorded by this invocation of the runner


@dataclass
class _Outputs:
    """Continuations of finished baseline samples, to compare speculative ones against."""

    # (baseline, prompt, rep) -> its stdout after the prompt, as printed (judge.Measured.generated)
    by_rep: dict[tuple, str] = field(default_factory=dict)
    any_rep: dict[tuple, str] = field(default_factory=dict)  # (baseline, prompt) -> first text

    def add(self, m: Measurement, text: str) -> None:
        """``m``: a baseline sample (or its invocation)."""
        self.by_rep[(baseline_of(m), m.prompt_id, m.repetition)] = text
        self.any_rep.setdefault((baseline_of(m), m.prompt_id), text)

    def get(self, m: Measurement) -> str | None:
        """The same repetition's baseline; else any repetition's (at temperature 0 they agree)."""
        key = baseline_of(m)
        return self.by_rep.get((key, m.prompt_id, m.repetition), self.any_rep.get((key, m.prompt_id)))


def _compared(inv: Invocation) -> bool:
    """At temperature 0 a speculative continuation must equal its baseline's (lossless); a synthetic
    one (drafts accepted at random) is not compared: its output is not valid by design."""
    return inv.generation.temperature == 0 and not is_synthetic(inv)


def _reference(inv: Invocation, outputs: _Outputs) -> str | None:
    """The baseline output a speculative run is compared with (and cut at, ``judge.capped_span``)."""
    return outputs.get(inv) if inv.role == "speculative" and _compared(inv) else None


def _check_output(inv: Invocation, measured: Measured, outputs: _Outputs) -> Sample:
    sample, text = measured.sample, measured.text
    if text is None or not _compared(inv):
        return sample
    if inv.role == "baseline":
        outputs.add(inv, measured.generated or text)
    elif (base := _reference(inv, outputs)) is not None:
        cmp = compare(text, continuation(base, "", echoed=False) or "")
        sample.outputs_match, sample.first_diff = cmp.match, cmp.first_diff
    return sample


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
            if (text := generated_text(read_output(path), inv.prompt_text, inv.prompt_echoed)) is not None:
                outputs.add(s, text)


def prepare_run_dir(run_dir: Path, resume: bool) -> None:
    """Before anything runs: the folder is writable, and new runs do not reuse a run's folder."""
    if resume:
        check_resumable(run_dir)
    check_writable(run_dir)
    if not resume:
        check_fresh(run_dir)


def executor_for(plan: Plan, facts: CrashFacts | None = None) -> Executor:
    """The executor of the plan's runner: a llama.cpp process per invocation, or a llama-server per
    server setting (``runner: server``). ``facts``: what names a crash's cause (this CPU, the build)."""
    if plan.runner == "server":
        return ServerExecutor(warmup=plan.server_warmup)
    if plan.pairing == "duet":
        labels = list(dict.fromkeys(i.build for i in plan.invocations))
        prompts = list(dict.fromkeys(i.prompt_id for i in plan.invocations))
        return DuetExecutor(plan.cpu_sets, labels, facts, prompts)
    return ProcessExecutor(facts)


def execute(
    plan: Plan,
    run_dir: Path,
    manifest: Manifest,
    progress: ProgressFn | None = None,
    resume: bool = False,
    extend: ExtendFn | None = None,
    observe: ObserveFn | None = None,
) -> RunResult:
    """Run every invocation of ``plan`` in order, recording samples in ``run_dir``.

    With ``resume``, recorded samples are skipped (warmups run again if anything is left).
    ``extend`` is asked for more invocations each time the plan is done (``repetitions: auto``);
    ``observe`` (the noise check) is called before, between and after samples and may raise to stop
    the run. However the run ends (RunInterrupted on Ctrl-C), the manifest records how.
    """
    prepare_run_dir(run_dir, resume)
    notify = progress or (lambda event: None)
    executor = executor_for(plan, build_crash_facts(manifest.build, manifest.env.cpu_isa))
    manifest.runner, manifest.pairing = plan.runner, plan.pairing
    with RunLock(run_dir) as lock:
        done_samples = load_samples(run_dir) if resume and has_samples(run_dir) else []
        done = {s.sample_key() for s in done_samples}
        if resume and any(not i.warmup and i.sample_key() not in done for i in plan.invocations):
            manifest.resumed_at.append(now_iso())  # a resume that had nothing left is no resume
        manifest.plan_size = len(plan.invocations)
        manifest.n_samples_planned = sum(not inv.warmup for inv in plan.invocations)
        records = [*manifest.cells, *map(cell_record, plan.measured)]  # tune's rounds add theirs
        manifest.cells = list({str(r): r for r in records}.values())
        unrun = [*manifest.left_out, *plan.left_out]  # a resume's plan leaves out the same cells
        manifest.left_out = list({lo.reason: lo for lo in unrun}.values())
        manifest.status, manifest.finished_at, manifest.status_reason = "running", None, None
        save_manifest(run_dir, manifest)
        in_flight: list[tuple[int, Invocation]] = []
        new: list[Sample] = []
        loads_before = manifest.model_loads
        try:  # from "running" on, whatever ends the run is written in the manifest (_finish)
            prepare_raw(run_dir)
            if resume:
                mark_orphans(run_dir, done_samples)
            first_raw = next_raw_number(run_dir)  # a resumed run's logs never reuse a name
            outputs = _Outputs()
            _recover_outputs(done_samples, plan.invocations, run_dir, outputs)
            queue = list(plan.invocations)
            left = sum(not inv.warmup and inv.sample_key() not in done for inv in queue)
            total, count, last_tps, ran = len(queue), 0, None, 0  # ran: measured samples this session ran
            look = observe or (lambda phase, n: None)
            one_by_one = plan.runner == "process" and plan.pairing == "sequential"  # a pair's starts
            notify(ProgressEvent("start", 0, total))
            look("before", 0)
            while queue:
                offset, i = first_raw + count, 0  # raw log numbers stay unique across rounds
                while i < len(queue):
                    inv = queue[i]
                    if (inv.warmup and left == 0) or (not inv.warmup and inv.sample_key() in done):
                        count += 1
                        notify(ProgressEvent("skipped", count, total, inv, last_tps=last_tps))
                        i += 1
                        continue
                    batch, i = batch_at(queue, i, done)
                    batch = [(offset + j, b) for j, b in batch]
                    for _, b in batch:
                        notify(ProgressEvent("begin", count, total, b, last_tps=last_tps))
                    in_flight = list(batch)
                    started = datetime.now(UTC)
                    outcomes = executor.run(batch, run_dir)
                    reruns = 0  # a pair whose process did not get its share of the CPU is measured again
                    while reruns < contention.MAX_RERUNS and (
                        why := first_starved(batch, outcomes, manifest.build.backend)
                    ):
                        reruns += 1
                        mark_partial(run_dir, [raw_stem(n, b) for n, b in batch], f".rerun{reruns}")
                        contention.note_rerun(manifest.noise, why)
                        noise.record(manifest.noise, noise.snapshot("rerun", now_iso()))
                        started = datetime.now(UTC)
                        outcomes = executor.run(batch, run_dir)
                    manifest.model_loads = loads_before + executor.model_loads
                    begun = starts(started, outcomes, one_by_one)
                    for (_, b), outcome, started_at in zip(batch, outcomes, begun, strict=True):
                        in_flight.pop(0)
                        count += 1
                        if b.warmup:
                            verdict = judge(b, outcome, manifest.run_id, started_at).sample
                            notify(ProgressEvent("warmup", count, total, b, verdict, last_tps))
                            if verdict.status in ("failed", "timeout"):
                                dropped = _drop_dead(b, verdict, queue, done, run_dir, manifest.run_id)
                                new += dropped
                                left -= len(dropped)
                                if dropped:
                                    notify(ProgressEvent("dropped", count, total, b, message=_dropped_line(
                                        b, verdict, dropped)))  # fmt: skip
                                if left == 0 and ran == 0:
                                    raise RunError(
                                        f"every cell's warmup failed ({verdict.invalid_reason}); nothing "
                                        f"was measured: the reasons are in {samples_path(run_dir)}"
                                    )
                            continue
                        measured = judge(b, outcome, manifest.run_id, started_at, _reference(b, outputs))
                        sample = _check_output(b, measured, outputs)
                        sample = stamp(sample, b, outcome, reruns)
                        ran += 1
                        append_sample(run_dir, sample)
                        new.append(sample)
                        done.add(sample.sample_key())
                        left -= 1
                        last_tps = sample.tps if sample.tps is not None else last_tps
                        notify(ProgressEvent("sample", count, total, b, sample, last_tps))
                        look("during", len(new))
                more = extend([*done_samples, *new]) if extend else []
                queue = [i for i in more if i.sample_key() not in done]
                if queue:
                    total += len(queue)
                    manifest.plan_size += len(queue)
                    manifest.n_samples_planned += len(queue)
                    save_manifest(run_dir, manifest)
                    notify(ProgressEvent("start", count, total))
            look("after", len(new))
        except BaseException as exc:
            executor.close()
            manifest.model_loads = loads_before + executor.model_loads
            if isinstance(exc, KeyboardInterrupt):
                mark_partial(run_dir, [raw_stem(index, b) for index, b in in_flight])
                reason = getattr(exc, "signal_name", "Ctrl-C")  # errors.Terminated for SIGTERM/SIGHUP
                _finish(manifest, run_dir, "interrupted", reason, lock)
                n_kept = len(done_samples) + len(new)
                raise RunInterrupted(run_dir, n_kept, reason, getattr(exc, "exit_code", 130)) from None
            why = str(exc) if isinstance(exc, SpecbenchError) else f"{type(exc).__name__}: {exc}"
            _finish(manifest, run_dir, "failed", why, lock)
            raise
        executor.close()
        manifest.model_loads = loads_before + executor.model_loads
        _finish(manifest, run_dir, "complete", None, lock)
    return RunResult([*done_samples, *new], len(new))


def _needs(warmup: Invocation, inv: Invocation) -> bool:
    """Whether ``inv`` needs what ``warmup`` found broken: the model it ran alone (a baseline or a
    draft alone: every run that loads it), or its speculative setting (binary, models and method)."""
    if inv.warmup or inv.build != warmup.build:
        return False
    if warmup.role != "speculative":
        return warmup.model in (inv.model, inv.draft)
    return (inv.binary_role, inv.model, inv.draft, inv.method) == (
        warmup.binary_role, warmup.model, warmup.draft, warmup.method,
    )  # fmt: skip


def _drop_dead(
    warmup: Invocation, verdict: Sample, queue: Sequence[Invocation], done: set[tuple], run_dir: Path,
    run_id: str,
) -> list[Sample]:  # fmt: skip
    """The samples of every invocation still to run that needs what the warmup found broken,
    recorded ``failed`` with the warmup's reason (not run)."""
    reason = f"not run: its warmup failed: {verdict.invalid_reason}"
    out = []
    for inv in queue:
        if not _needs(warmup, inv) or inv.sample_key() in done:
            continue
        sample = Sample(
            **inv.model_dump(include=set(Measurement.model_fields)), run_id=run_id, status="failed",
            valid=False, invalid_reason=reason, cmd=list(inv.argv), started_at=now_iso(), wall_s=0.0,
        )  # fmt: skip
        append_sample(run_dir, sample)
        done.add(sample.sample_key())
        out.append(sample)
    return out


def _dropped_line(warmup: Invocation, verdict: Sample, dropped: list[Sample]) -> str:
    """One line: which cells are out of the run, and why."""
    names = {s.pair if s.role == "speculative" else f"{s.role} {s.model}" for s in dropped}
    cells = sorted(n for n in names if n is not None)
    what = f"model {warmup.model}" if warmup.role != "speculative" else f"{warmup.pair} {warmup.method}"
    return (
        f"dropped {len(dropped)} sample(s) of {', '.join(str(c) for c in cells)}: the warmup of {what} "
        f"failed ({verdict.invalid_reason})"
    )


def _finish(manifest: Manifest, run_dir: Path, status: Status, reason: str | None, lock: RunLock) -> None:
    """Record how the run ended; on a full disk, with the space the lock reserved for it. A manifest
    that still cannot be written must not hide the error that ended the run."""
    manifest.mark_finished(status, reason)
    try:
        save_manifest(run_dir, manifest)
    except RunError:
        if lock.free_reserve():
            with suppress(RunError):
                save_manifest(run_dir, manifest)


def starts(started: datetime, outcomes: Sequence, one_by_one: bool) -> list[str]:
    """When each invocation of a batch began: one after the other (the process runner's pair), or
    all at ``started`` (the server runner's requests in flight together)."""
    offsets = accumulate((out.wall_s if one_by_one else 0.0 for out in outcomes[:-1]), initial=0.0)
    return [(started + timedelta(seconds=offset)).isoformat(timespec="seconds") for offset in offsets]


def pair_key(m: Measurement) -> tuple:
    return m.model_copy(update={"build": None}).sample_key()


def batch_at(
    plan: Sequence[Invocation], i: int, done: set[tuple]
) -> tuple[list[tuple[int, Invocation]], int]:
    """The invocations from ``i`` on that form one batch (finished ones of a resumed run left out),
    and the index after them."""
    batch = [(i, plan[i])]
    j = i + 1
    if plan[i].batch is None:
        key = None if plan[i].warmup else pair_key(plan[i])
        partner = lambda inv: not inv.warmup and inv.batch is None and pair_key(inv) == key  # noqa: E731
        while key and j < len(plan) and partner(plan[j]):
            if plan[j].sample_key() not in done:
                batch.append((j, plan[j]))
            j += 1
        return batch, j
    while plan[i].batch is not None and j < len(plan) and plan[j].batch == plan[i].batch:
        if plan[j].warmup or plan[j].sample_key() not in done:
            batch.append((j, plan[j]))
        j += 1
    return batch, j


def _load_s(out: Outcome) -> float:
    """Seconds the process spent loading its models (llama.cpp's ``load time``): one thread reads
    the weights, so that part of the wall time has one thread's CPU, not ``threads``'."""
    perf = out.log.perf if out.log is not None and out.log.perf is not None else None
    ms = sum(p.load_ms or 0.0 for p in (perf.target, perf.draft) if p is not None) if perf else 0.0
    return ms / 1000 if ms > 0 and math.isfinite(ms) else 0.0


def starved(inv: Invocation, out: Outcome, backend: str | None) -> str | None:
    """Why this outcome is not judged (``contention.starved``), or None: judged only for CPU builds,
    a measured run that finished, and threads the config set."""
    threads = inv.generation.threads
    if backend != "cpu" or inv.warmup or out.error is not None or not threads:
        return None
    if out.batch_wall_s is not None:  # a server loaded before its batch
        return contention.starved(threads, out.cpu_s, out.batch_wall_s)
    return contention.starved(threads, out.cpu_s, out.wall_s, _load_s(out))


def first_starved(
    batch: Sequence[tuple[int, Invocation]], outcomes: Sequence[Outcome], backend: str | None
) -> str | None:
    """The first reason in a batch (a pair, or the server's requests in flight together)."""
    for (_, inv), out in zip(batch, outcomes, strict=True):
        if (why := starved(inv, out, backend)) is not None:
            return f"{inv.role} {inv.model}{f' on {inv.build}' if inv.build else ''}, {inv.prompt_id}: {why}"
    return None


def stamp(sample: Sample, inv: Invocation, out: Outcome, reruns: int) -> Sample:
    """The sample with what it got of the CPU, the load as it ended, and its pair's re-runs."""
    cpu = round(out.cpu_s, 4) if out.cpu_s is not None else None
    threads = inv.generation.threads
    return sample.model_copy(
        update={"cpu_s": cpu, "cpu_threads": threads, "load_1m": noise.load_1m(), "reruns": reruns}
    )

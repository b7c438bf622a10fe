"""Measure the pass costs the speed model needs with llama.cpp's own ``llama-bench``.

One llama-bench run per model (``-p k1,k2,... -n N -d DEPTH -o json``) times a pass over k tokens
and N single-token decodes with DEPTH tokens already in the KV cache (an empty cache is faster;
a llama-bench without ``-d`` times at depth 0, which the calibration records). Entries are cached
per build, model, threads, ngl and depth, once the caller knows the machine was quiet (``store``).
``specbench run`` reuses an entry at a KV depth within ``DEPTH_TOLERANCE`` of its own: its report
gets a ``model`` column.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from specbench.base import paths
from specbench.base.childenv import child_env
from specbench.base.errors import RunError
from specbench.base.files import write_atomic
from specbench.base.formats import json_line, now_iso
from specbench.builder.buildinfo import BuildInfo
from specbench.builder.workaround import crash_facts, with_workaround
from specbench.execute.preparation import Prepared
from specbench.machine import envinfo
from specbench.parse.crash import classify, error_line, exit_status, last_line
from specbench.results.calibration import Calibration, PassCosts, load_calibration, save_calibration
from specbench.tune.rounds import kv_depth

DECODE_TOKENS = 16  # tg length: the decode time per token is its mean


GRIDS = (  # the k's of each calibration level, densest first (a smaller budget takes a sparser one)
    (1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17, 25, 33, 49, 65),
    (1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65),
    (1, 2, 3, 5, 9, 17, 33, 65),
    (1, 2, 5),
)


def pass_sizes(max_draft: int, level: int = 0) -> list[int]:
    """The k's to time at ``level`` (0: every k up to 9, where small passes change most, then a sparser
    grid up to g+1; higher levels are sparser): always 1 and g+1, nothing above g+1."""
    top = max_draft + 1
    return sorted({k for k in GRIDS[min(level, len(GRIDS) - 1)] if k <= top} | {top})


class BenchEntry(BaseModel):
    """The fields of one llama-bench JSON test that calibration uses."""

    n_prompt: int
    n_gen: int
    n_depth: int = 0
    avg_ns: float
    stddev_ns: float = 0.0


def parse_bench_json(text: str) -> list[BenchEntry]:
    """llama-bench ``-o json`` output: a JSON array of tests (anything before it is ignored)."""
    start = text.find("[")
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except ValueError as exc:
        raise RunError(f"llama-bench printed no valid JSON ({exc}); run it by hand to see why") from exc
    if not isinstance(data, list):
        raise RunError("llama-bench printed no JSON array of tests; run it by hand to see why")
    try:
        return [BenchEntry.model_validate(d) for d in data]
    except ValidationError as exc:
        raise RunError(f"llama-bench JSON lacks n_prompt/n_gen/avg_ns ({exc.error_count()} errors)") from exc


def costs_from_entries(model: str, sha256: str | None, ngl: int, entries: list[BenchEntry]) -> PassCosts:
    """A pp test is one pass over n_prompt tokens; a tg test is n_gen single-token decodes."""
    tg = [e for e in entries if e.n_prompt == 0 and e.n_gen > 0]
    pp = {e.n_prompt: e.avg_ns / 1e9 for e in entries if e.n_gen == 0 and e.n_prompt > 0}
    sd = {e.n_prompt: e.stddev_ns / 1e9 for e in entries if e.n_gen == 0 and e.n_prompt > 0}
    if not tg and 1 not in pp:
        raise RunError(f"llama-bench measured no decode for {model}; its output had no tg or pp 1 test")
    decode = tg[0].avg_ns / 1e9 / tg[0].n_gen if tg else pp[1]
    return PassCosts(model=model, sha256=sha256, ngl=ngl, decode_s=decode, pass_s=pp, pass_sd=sd)


DEPTH_OPTIONS = ("-d", "--n-depth")  # llama-bench's KV depth (2025+; older trees and ik_llama.cpp lack it)


def has_depth(build: BuildInfo) -> bool:
    """This build's llama-bench lists ``-d`` (a build probed before option names were kept: yes)."""
    known = build.binary("bench").flags.known
    return known is None or any(o in known for o in DEPTH_OPTIONS)


def bench_depth(build: BuildInfo, depth: int) -> int:
    """The KV depth this build's llama-bench can time passes at: ``depth``, or 0 without ``-d`` (an
    empty cache: faster passes than a run's prompts see, which the calibration's depth then says)."""
    return depth if has_depth(build) else 0


def depth_note(build: BuildInfo, depth: int) -> str | None:
    """One line for the user when this build's llama-bench cannot time at the run's ``depth``."""
    if depth == 0 or has_depth(build):
        return None
    return (
        f"llama-bench of this build has no -d (KV depth): passes are timed on an empty cache, not at "
        f"the prompts' depth {depth}, so the speed model's costs are low; a llama.cpp from 2025 on has it"
    )


def bench_argv(
    build: BuildInfo, model_path: str, ks: list[int], depth: int, threads: int | None, ngl: int, reps: int,
    options: Sequence[str] = (),
) -> list[str]:  # fmt: skip
    """llama-bench over passes of ``ks`` tokens at ``depth``, with the run's llama.cpp ``options`` and
    the build's self-test workaround, so it times the mode every other binary of the build runs in."""
    if depth and not has_depth(build):
        raise RunError(
            f"llama-bench of this build has no -d (KV depth) to time passes at depth {depth}; "
            "calibrate at depth 0 (bench_depth) or build a llama.cpp from 2025 on"
        )
    at = ["-d", str(depth)] if has_depth(build) else []
    argv = [*build.binary("bench").argv0, "-m", model_path, "-p", ",".join(map(str, ks)),
            "-n", str(DECODE_TOKENS), *at, "-r", str(reps), "-ngl", str(ngl), "-o", "json"]  # fmt: skip
    if threads is not None:
        argv += ["-t", str(threads)]
    return with_workaround(argv + list(options), build, "bench")


class CachedCosts(BaseModel):
    """One model's pass costs in the calibration cache, with what they were measured under."""

    build: str
    sha256: str | None
    threads: int | None
    ngl: int
    depth: int
    repetitions: int
    measured_at: str
    costs: PassCosts
    options: list[str] = []  # llama-bench's arguments for the run's llama.cpp options (flash_attn, ...)


def _cache_file(
    build: str, sha: str | None, threads: int | None, ngl: int, depth: int, options: Sequence[str] = ()
) -> Path:
    opts = f"|o{' '.join(options)}" if options else ""  # without options: the digests of older entries
    digest = hashlib.sha256(
        f"{build}|{sha}|t{threads}|ngl{ngl}|d{depth}|tg{DECODE_TOKENS}{opts}".encode()
    ).hexdigest()
    return paths.calibration_dir() / f"{digest[:16]}.json"


def _read_cached(path: Path) -> CachedCosts | None:
    """A cache entry, or None: missing, unreadable, of an older format, or with impossible costs."""
    try:
        entry = CachedCosts.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None
    return None if entry.costs.impossible() else entry


def cached_costs(
    build: str, sha256: str | None, threads: int | None, ngl: int, depth: int, depth_tolerance: float = 0.0,
    options: Sequence[str] = (),
) -> CachedCosts | None:  # fmt: skip
    """The cached costs of a model at ``depth``; with ``depth_tolerance`` (a fraction) the entry of the
    nearest depth within it (a run's prompts fill the KV cache about as deep as tune's)."""
    exact = _read_cached(_cache_file(build, sha256, threads, ngl, depth, options))
    if exact is not None or depth_tolerance <= 0:
        return exact
    folder = paths.calibration_dir()
    near = [e for f in sorted(folder.glob("*.json")) if (e := _read_cached(f)) is not None
            and (e.build, e.sha256, e.threads, e.ngl) == (build, sha256, threads, ngl)
            and e.options == list(options)
            and abs(e.depth - depth) <= depth_tolerance * max(depth, 1)]  # fmt: skip
    return min(near, key=lambda e: abs(e.depth - depth), default=None)


def measure_model(
    build: BuildInfo,
    name: str,
    path: str,
    sha256: str | None,
    *,
    ks: list[int],
    depth: int,
    threads: int | None,
    ngl: int,
    reps: int = 2,
    timeout_s: float = 600,
    use_cache: bool = True,
    limit: str | None = None,
    options: Sequence[str] = (),
) -> tuple[CachedCosts, bool]:
    """One model's pass costs, and whether they came from the cache (which must hold every k of
    ``ks``); measured ones are not stored here (``store``). ``limit``: what set ``timeout_s``."""
    if use_cache:
        hit = cached_costs(build.key, sha256, threads, ngl, depth, options=options)
        if hit is not None and set(ks) <= set(hit.costs.pass_s):
            return hit.model_copy(update={"costs": hit.costs.model_copy(update={"model": name})}), True
    argv = bench_argv(build, path, ks, depth, threads, ngl, reps, options)
    at = now_iso()
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL, env=child_env()
        )
    except subprocess.TimeoutExpired as exc:
        why = limit or "its limit; shorter prompts or n_predict lower the KV depth it fills"
        raise CalibrationTimeout(f"llama-bench on {name} ran past {timeout_s:.0f} s ({why})") from exc
    if proc.returncode != 0:
        raise RunError(f"llama-bench on {name} failed: {bench_failure(proc, build, argv)}")
    costs = costs_from_entries(name, sha256, ngl, parse_bench_json(proc.stdout))
    entry = CachedCosts(build=build.key, sha256=sha256, threads=threads, ngl=ngl, depth=depth,
                        repetitions=reps, measured_at=at, costs=costs, options=list(options))  # fmt: skip
    return entry, False


def bench_failure(proc: subprocess.CompletedProcess[str], build: BuildInfo, argv: list[str]) -> str:
    """Why llama-bench failed, in one line: a known crash class with its cure (``parse.crash``, as
    for every other binary), else llama.cpp's own error line, else its last line."""
    code, sig = exit_status(proc.returncode)
    how = f"killed by {sig}" if sig else f"exit {code}"
    known = classify(proc.stderr, code, sig, crash_facts(build, envinfo.cpu_isa(), argv))
    if known is not None:
        return f"{how}: {known.line}"
    said = error_line(proc.stderr) or last_line(proc.stderr) or "no output"
    return f"{how}: {said}"


class CalibrationTimeout(RunError):
    """llama-bench did not finish in the time it was given."""


def store(entry: CachedCosts) -> None:
    """Write one model's costs to the cache (atomically: a crash leaves the old entry or none)."""
    cache = _cache_file(entry.build, entry.sha256, entry.threads, entry.ngl, entry.depth, entry.options)
    write_atomic(cache, json_line(entry))


@dataclass
class Calibrated:
    """A calibration and the entries of it measured now (the ones ``store`` may cache)."""

    calibration: Calibration
    fresh: list[CachedCosts] = field(default_factory=list)

    def impossible(self) -> str | None:
        """The first model's reason its costs cannot be right (``PassCosts.impossible``), or None."""
        return next((why for m in self.calibration.models if (why := m.impossible())), None)

    def refusal(self, busy: list[str]) -> str | None:
        """Why this calibration must not be cached for later runs (a busy machine, impossible costs), or
        None. Tune itself still uses it: it is the best measure of this moment there is."""
        if busy:
            return f"the machine was busy while it was measured ({busy[0]})"
        why = self.impossible()
        return f"its pass costs cannot be right ({why}); measure it again on a quiet machine" if why else None


def calibrate(
    build: BuildInfo,
    models: list[tuple],
    *,
    max_draft: int,
    depth: int,
    threads: int | None,
    reps: int = 2,
    level: int = 0,
    timeout_s: float = 600,
    limit: str | None = None,
) -> Calibrated:
    """Pass costs of each (name, path, sha256, ngl[, llama-bench options]) at ``depth``, the k's of
    ``level`` up to max_draft+1, all of it within ``timeout_s`` (``limit``: what set it, for the message)."""
    ks = pass_sizes(max_draft, level)
    depth = bench_depth(build, depth)  # without llama-bench -d: at depth 0, which the calibration says
    deadline = time.monotonic() + timeout_s
    entries = []
    for name, path, sha, ngl, *rest in models:
        options = rest[0] if rest else []
        left = deadline - time.monotonic()
        if left <= 0:
            raise CalibrationTimeout(
                f"calibration ran past {timeout_s:.0f} s before {name} ({limit or 'its limit'})"
            )
        entries.append(measure_model(build, name, path, sha, ks=ks, depth=depth, threads=threads, ngl=ngl,
                                     reps=reps, timeout_s=left, limit=limit, options=options))  # fmt: skip
    fresh = [e for e, hit in entries if not hit]
    cal = Calibration(
        build=build.key, threads=threads, depth=depth, repetitions=min(e.repetitions for e, _ in entries),
        models=[e.costs for e, _ in entries], measured_at=min(e.measured_at for e, _ in entries),
        source="measured" if fresh else "cache",
    )  # fmt: skip
    return Calibrated(cal, fresh)


DEPTH_TOLERANCE = 0.25  # a pass at depth 300 or 375 costs about the same; twice as deep does not


def cached_calibration(prepared: Prepared, run_dir: Path) -> Calibration | None:
    """The cached calibration of every (target, draft) pair of the run that has one, or None."""
    cfg, build = prepared.config, prepared.build.key
    threads = cfg.generation.threads
    depth = kv_depth(run_dir, cfg.generation.n_predict)
    entries = {}
    for pair in cfg.pairs.values():
        if pair.draft is None:
            continue
        wanted = [(pair.target, ngl) for ngl in cfg.sweep.ngl] + [(pair.draft, n) for n in cfg.sweep.ngld]
        found = {}
        for name, layers in wanted:
            sha = getattr(prepared.models.get(name), "sha256", None)
            hit = cached_costs(build, sha, threads, layers, depth, DEPTH_TOLERANCE) if sha else None
            if hit is not None:
                found[(name, layers)] = hit
        if any(k[0] == pair.target for k in found) and any(k[0] == pair.draft for k in found):
            entries.update(found)
    if not entries:
        return None
    hits = list(entries.values())
    return Calibration(
        build=build, threads=threads, depth=hits[0].depth,
        repetitions=min(e.repetitions for e in hits),
        models=[e.costs.model_copy(update={"model": n, "ngl": g}) for (n, g), e in entries.items()],
        measured_at=min(e.measured_at for e in hits), source="cache",
    )  # fmt: skip


def reuse_calibration(prepared: Prepared, run_dir: Path) -> None:
    """A calibration `specbench tune` cached for these models here gives the report its model column."""
    if load_calibration(run_dir) is None and (cal := cached_calibration(prepared, run_dir)) is not None:
        save_calibration(run_dir, cal)

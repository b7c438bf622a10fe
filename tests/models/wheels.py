"""Tiny real wheels in a local find-links folder, so tests drive the real `pip download` offline."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    folder: Path, name: str, version: str, files: dict[str, bytes], lie_in_record: bool = False
) -> Path:
    """Write ``{name}-{version}-py3-none-any.whl`` holding ``files`` (+ dist-info with a RECORD)."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    members = dict(files)
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    members[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: specbench-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for member, data in members.items():
        digest = _b64(b"tampered" + data) if lie_in_record and member in files else _b64(data)
        record.append(f"{member},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, data in members.items():
            zf.writestr(member, data)
    return path

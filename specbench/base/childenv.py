"""The environment of every child specbench starts: ours minus secrets, with the C locale, so a
child that echoes it cannot write a token into a log, and numbers print with a decimal point."""

from __future__ import annotations

import os
import re

from specbench.base.redact import redact

# Environment variables that hold credentials (HF_TOKEN...): llama.cpp needs none (specbench downloads).
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_API_KEY$|_ACCESS_KEY", re.IGNORECASE)


def unpassable(text: str) -> str | None:
    """Why ``text`` cannot reach a child as an argument or environment value, nor llama-server as a
    request's text (None: it can): a NUL ends a C string (Popen refuses it: ``embedded null byte``),
    and a lone surrogate has no UTF-8 bytes (the server's JSON parser refuses its escape)."""
    at = text.find("\x00")
    if at >= 0:
        return f"a NUL character (\\u0000) at character {at + 1}"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ascii(text[exc.start])
        return f"a character with no UTF-8 form ({bad}, a lone surrogate) at character {exc.start + 1}"
    return None


def child_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: our environment) minus secrets, with ``LC_ALL=C``."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if not _SECRET_NAME.search(k)}
    env["LC_ALL"] = "C"
    return env


# Variables that change what llama.cpp does (it reads every option from LLAMA_ARG_*), which device it
# sees, or how its threads run: provenance, recorded in the manifest as the child sees them.
_PROVENANCE = re.compile(
    r"^(?:LLAMA_\w*|GGML_\w*|OMP_\w*|KMP_\w*|GOMP_\w*|CUDA_VISIBLE_DEVICES|HIP_VISIBLE_DEVICES"
    r"|ROCR_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL|CUDA_LAUNCH_BLOCKING|MTL_\w*|OPENBLAS_NUM_THREADS"
    r"|MKL_NUM_THREADS|ONEAPI_DEVICE_SELECTOR|ZES_ENABLE_SYSMAN)$"
)


def provenance_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The variables of ``child_env(base)`` that can change a llama.cpp run, values redacted."""
    return {k: redact(v) for k, v in sorted(child_env(base).items()) if _PROVENANCE.match(k)}

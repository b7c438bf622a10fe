"""The environment of every llama.cpp binary, build step and probe specbench starts: ours minus
secrets, with the C locale. A child that echoes its environment (a crash dump, a verbose build)
then cannot write a token into a log, and numbers print with a decimal point. Every stage starts
children, so this sits on the floor below them all."""

from __future__ import annotations

import os
import re

# Environment variables that hold credentials; llama.cpp needs none of them (specbench downloads).
SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_TOKEN", "HUGGINGFACE_TOKEN")
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_API_KEY$|_ACCESS_KEY", re.IGNORECASE)


def child_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: our environment) minus secrets, with ``LC_ALL=C``."""
    env = dict(os.environ if base is None else base)
    for name in [*SECRET_ENV, *(n for n in env if _SECRET_NAME.search(n))]:
        env.pop(name, None)
    env["LC_ALL"] = "C"
    return env

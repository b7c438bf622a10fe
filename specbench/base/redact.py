"""Credentials inside values: the one redaction every recorded or printed text goes through.

A secret rides inside values whose names say nothing: a URL's userinfo, a signed or token query, a
bare Hugging Face or GitHub token, an ``Authorization`` header, the value after ``--hf-token``.
``redact`` replaces each with ``REDACTED`` and keeps the rest, so a value still says what it was.
Never applied to what is *used*: a request sent, a config passed on."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

REDACTED = "REDACTED"

# A query or fragment parameter whose name says it holds a credential (case-insensitive): any name
# containing token, secret, password, signature, credential, auth or api key, and the short names
# signed URLs use (AWS X-Amz-Signature/-Credential/-Security-Token, Azure SAS sig, GCS Signature).
_SECRET_PARAM = re.compile(
    r"[\w.-]*(?:token|secret|passw(?:or)?d|signature|credential|auth(?!or)|api[_-]?key|apikey|private[_-]?key)[\w.-]*"
    r"|key|sig|pwd|pass|code_verifier|client_secret",
    re.IGNORECASE,
)
# Flags whose next argument (or ``=value``) is a credential: llama.cpp's Hub token and server key.
SECRET_FLAGS = ("--hf-token", "-hft", "--api-key")

_PATTERN = re.compile(
    # 1: scheme://USERINFO@ (userinfo up to the first @ before the host's end)
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s\"'<>]+)@"
    # 2: ?name=VALUE / &name=VALUE / ;name=VALUE (also &amp;name= in HTML)
    r"|(?P<sep>[?&;#])(?P<name>[A-Za-z0-9_.\-]+)=(?P<value>[^&#;\s\"'<>]+)"
    # 3: tokens recognisable by their shape
    r"|(?P<shape>\b(?:hf_|api_org_)[A-Za-z0-9]{20,}|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_\w{20,}"
    r"|\bAKIA[0-9A-Z]{16}\b)"
    # 4: Authorization: Bearer X / Authorization: X / Bearer X (a token's length: not "bearer of")
    r"|(?P<auth>\b(?:authorization\s*[:=]\s*(?:(?:bearer|basic|token)\s+)?|bearer\s+(?=[\w.~+/=-]{12})))"
    r"(?P<credential>[^\s\"'<>,;]+)"
    # 5: a SECRET_FLAGS flag, then X or =X (--hf-token X, -hft=X), in a command line printed as text
    rf"|(?P<flag>(?<![\w-])(?:{'|'.join(map(re.escape, SECRET_FLAGS))}))"
    r"(?P<flagsep>=|\s+)(?P<flagvalue>'[^']*'|\"[^\"]*\"|[^\s]+)",
    re.IGNORECASE,
)


def _replace(m: re.Match[str]) -> str:
    if m.group("scheme"):
        return f"{m.group('scheme')}{REDACTED}@"
    if m.group("sep"):
        name = m.group("name")
        if _SECRET_PARAM.fullmatch(name) and m.group("value") != REDACTED:
            return f"{m.group('sep')}{name}={REDACTED}"
        return m.group(0)
    if m.group("shape"):
        return REDACTED
    if m.group("auth"):
        return f"{m.group('auth')}{REDACTED}"
    return f"{m.group('flag')}{m.group('flagsep')}{REDACTED}"


def redact(text: str) -> str:
    """``text`` with every credential it holds replaced by ``REDACTED`` (see the module's list)."""
    return _PATTERN.sub(_replace, text) if text else text


def redact_argv(argv: Sequence[Any]) -> list[Any]:
    """A command line, each argument redacted and the one after a secret flag replaced whole."""
    out: list[Any] = []
    for i, arg in enumerate(argv):
        if not isinstance(arg, str):
            out.append(arg)
        elif i and argv[i - 1] in SECRET_FLAGS:
            out.append(REDACTED)
        else:
            out.append(redact(arg))
    return out


def redact_data(data: Any) -> Any:
    """``data`` (what JSON holds) with every string redacted, keys too; a list as a command line."""
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {redact_data(k): redact_data(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        if any(isinstance(v, str) and v in SECRET_FLAGS for v in data):
            return redact_argv(data)
        return [redact_data(v) for v in data]
    return data

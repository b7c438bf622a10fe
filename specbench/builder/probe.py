"""Learn how a llama.cpp binary spells its options by reading its ``--help`` once, at build time.

llama.cpp renamed the speculative options several times (``--draft`` -> ``--draft-max`` ->
``--spec-draft-n-max``) and keeps removed names in the help only to abort with an error, so the
probe prefers the newest spelling that is not marked removed.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from specbench.base.childenv import child_env
from specbench.base.errors import BuildError
from specbench.base.llamaopts import AXES, METHOD, TUNED
from specbench.base.methods import method_of
from specbench.builder.buildinfo import BinaryInfo, BuildInfo, FlagSpelling, NgramSizeFlags
from specbench.builder.options import probe_options

PROBE_TIMEOUT_S = 20

# For each FlagSpelling field, the spellings to look for, newest first: an axis's from its table entry
# (the method's is spec_type), then the flags specbench sets itself.
PREFERENCES: dict[str, list[str]] = {
    **{o.key: list(o.spellings) for o in AXES if o.key in FlagSpelling.model_fields},
    "spec_type": list(METHOD.spellings),
    "model_draft": ["--spec-draft-model", "-md", "--model-draft"],
    "no_display_prompt": ["--no-display-prompt"],
    "no_conversation": ["-no-cnv", "--no-conversation"],
    "no_escape": ["--no-escape"],
    "cache_ram": ["--cache-ram", "-cram"],
    "no_repack": ["--no-repack", "-nr"],
    "log_verbosity": ["-lv", "--verbosity", "--log-verbosity"],
}

# The n-gram lookups' size axes: per method first (``--spec-<method>-size-n``), then the one option older
# builds and ik_llama.cpp share. NgramSizeFlags names them by their last letter.
SIZE_AXES = tuple(o for o in AXES if o.scope == "lookup")
# Recorded in FlagSpelling.options: the tuned options, and a draft's axis without a field of its own.
PROBED = (*TUNED, *(o for o in AXES if o.group == "axis" and o.scope in ("draft", "draft_context")
                    and o.key not in FlagSpelling.model_fields))  # fmt: skip

# Entries start at column 0 (2024+), 2 (2023) or 9 (ik_llama.cpp, an option with no short form);
# descriptions continue at column 24 (2023), 34 (ik) or 40 (2024+).
_ENTRY_INDENT = 12
_OPTION = re.compile(r"^-{1,2}[A-Za-z0-9][\w.-]*$")
_REMOVED = re.compile(r"\b(has been removed|was removed|no longer (supported|available))\b", re.I)
_VALUE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass
class HelpOption:
    """One entry of a help text: its spellings, the value placeholder, and its description."""

    names: list[str]
    metavar: str = ""
    description: list[str] = field(default_factory=list)

    @property
    def removed(self) -> bool:
        return bool(_REMOVED.search(" ".join(self.description)))


def _parse_header(line: str) -> HelpOption:
    """``-md FNAME, --model-draft FNAME  draft model...`` -> names, metavar, description words."""
    tokens = line.split()
    names: list[str] = []
    metavar = ""
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not _OPTION.match(tok.rstrip(",")):
            break
        names.append(tok.rstrip(","))
        i += 1
        if tok.endswith(","):
            continue  # another spelling follows
        if i < len(tokens) and not _OPTION.match(tokens[i].rstrip(",")):
            metavar = metavar or tokens[i].rstrip(",")
            i += 1
            if tokens[i - 1].endswith(","):
                continue  # `-ngld N, --n-gpu-layers-draft N`
        break
    return HelpOption(names=names, metavar=metavar, description=[" ".join(tokens[i:])])


def parse_help(text: str) -> list[HelpOption]:
    """Split a ``--help`` text of any era into option entries: a line that starts with an option, indented
    less than ``_ENTRY_INDENT``, opens one; deeper-indented lines continue it."""
    entries: list[HelpOption] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.lstrip()
        if not stripped:
            continue
        indent = len(line) - len(stripped)
        if stripped.startswith("-") and indent < _ENTRY_INDENT and not stripped.startswith("---"):
            entry = _parse_header(stripped)
            if entry.names:
                entries.append(entry)
                continue
        if entries and indent >= 8:
            entries[-1].description.append(stripped)
    return entries


def _spec_values(entry: HelpOption) -> list[str]:
    """The values ``--spec-type`` takes: from ``a,b,c`` / ``[a|b]`` metavars or a listed description."""
    # ik_llama.cpp writes `--spec-type Name [none | ngram - cache | ngram - simple | ...]`: the
    # spaces around `|` and `-` are dropped before the list is read
    described = re.sub(r"\s*([|,-])\s*", r"\1", " ".join(entry.description))
    candidates = [entry.metavar] + [
        m.group(1) for m in re.finditer(r"[\[{(]([a-z0-9_|,-]+)[\]})]", described)
    ]
    for cand in candidates:
        values = [v.strip() for v in re.split(r"[,|]", cand.strip("[]{}()<>")) if v.strip()]
        if len(values) > 1 and all(_VALUE.match(v) for v in values):
            return values
    return []


def _ngram_sizes(methods: list[str], usable: dict[str, HelpOption]) -> dict[str, NgramSizeFlags]:
    """``--spec-<method>-size-n``/``-m`` of each n-gram lookup (``base.methods``) that has them (the
    pinned build: ngram-simple, ngram-map-k, ngram-map-k4v)."""
    sizes = {}
    for method in methods:
        if not method_of(str(method)).lookup:
            continue
        own = {o.key[-1]: o.spellings[0].format(method=method) for o in SIZE_AXES}
        if not any(s in usable for s in own.values()) and method_of(str(method)).ngram_sizes:
            own = {o.key[-1]: o.spellings[1] for o in SIZE_AXES}  # one for all (older builds, ik)
        flags = NgramSizeFlags(**{x: s if s in usable else None for x, s in own.items()})
        if flags.n or flags.m:
            sizes[str(method)] = flags
    return sizes


def flags_from_help(text: str) -> FlagSpelling:
    """How a binary spells each option specbench passes, read from its help text."""
    usable: dict[str, HelpOption] = {}
    for entry in (e for e in parse_help(text) if not e.removed):
        for name in entry.names:
            usable.setdefault(name, entry)
    found: dict[str, object] = {
        key: next((s for s in names if s in usable), None) for key, names in PREFERENCES.items()
    }
    spec_types = _spec_values(usable[str(found["spec_type"])]) if found["spec_type"] else []
    found["spec_types"] = spec_types
    found["ngram_sizes"] = _ngram_sizes(spec_types, usable)
    found["options"] = probe_options(usable, PROBED)
    found["known"] = sorted(usable)
    return FlagSpelling.model_validate(found)


def _run(path: Path, arg: str, command: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    env = {**child_env(), "LANG": "C"}
    try:
        with tempfile.TemporaryDirectory() as cwd:  # an older llama.cpp writes its log where it runs
            return subprocess.run(
                [str(path), *command, arg],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=PROBE_TIMEOUT_S,
                env=env,
                cwd=cwd,
            )
    except subprocess.TimeoutExpired as exc:
        raise BuildError(f"{path} {arg} did not finish in {PROBE_TIMEOUT_S} s; rebuild with --force") from exc
    except OSError as exc:
        raise BuildError(f"cannot run {path}: {exc}; rebuild with `specbench build --force`") from exc


# Raised whenever the probe learns to read something new, so a cached build.json is re-probed (not
# rebuilt); a new key in specbench.base.llamaopts needs no raise: build.json records the keys probed.
PROBE_VERSION = 7
PROBED_OPTIONS: tuple[str, ...] = tuple(sorted(o.key for o in PROBED))  # the option keys this probe reads


def probe_is_current(info: BuildInfo) -> bool:
    """Whether a build.json's flags were read by this probe (else re-read its --help, not rebuild)."""
    return info.probe_version >= PROBE_VERSION and set(PROBED_OPTIONS) <= set(info.probed_options)


def unified_command(path: Path, names: Sequence[str]) -> str | None:
    """The first of ``names`` the unified `llama` program runs as a command, or None: a known one
    prints its usage whatever its exit code, an unknown one says ``unknown command 'NAME'``."""
    for name in names:
        result = _run(path, "--help", [name])
        text = result.stdout + result.stderr
        if result.returncode >= 0 and f"unknown command '{name}'" not in text and text.strip():
            return name
    return None


def probe_binary(role: str, path: Path, command: Sequence[str] = ()) -> BinaryInfo:
    """Version and flag spellings of one built binary (``command``: of the unified `llama`)."""
    result = _run(path, "--help", command)
    if result.returncode < 0:
        raise BuildError(
            f"{path} --help was killed by signal {-result.returncode}; rebuild with `specbench build --force`"
        )
    text = result.stdout + "\n" + result.stderr
    said = _run(path, "--version")  # ``version: N (sha)`` and ``built with``; none from older binaries
    lines = (said.stdout + said.stderr).strip().splitlines()
    version = "\n".join(ln for ln in lines if ln.startswith(("version:", "built with")))
    name = " ".join([path.name, *command])
    return BinaryInfo(role=role, name=name, path=str(path), version=version,
                      flags=flags_from_help(text), command=list(command))  # fmt: skip

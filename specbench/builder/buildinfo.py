"""What a build is: the contract between ``specbench build`` and the runner (``build.json``).

The runner never guesses flag spellings: it asks the BuildInfo, which probed each binary's ``--help``
once at build time, so one runner speaks to 2023 and 2026 llama.cpp trees.
"""

from __future__ import annotations

import json
from contextlib import suppress
from pathlib import Path

from pydantic import BaseModel, Field

from specbench.base import paths
from specbench.base.errors import BuildError
from specbench.base.files import write_atomic
from specbench.base.formats import json_text
from specbench.base.llamaopts import METHOD
from specbench.base.methods import DRAFT_SIMPLE
from specbench.builder.options import OptionFlag
from specbench.builder.toolkit import detect_backend
from specbench.machine.envinfo import EnvInfo, collect

# Roles specbench runs, in the order it prefers names for them (newest first).
ROLE_NAMES: dict[str, list[str]] = {
    "completion": ["llama-completion", "llama-cli", "main"],
    "speculative": ["llama-speculative", "speculative"],
    "speculative_simple": ["llama-speculative-simple"],
    "server": ["llama-server", "server"],
    "quantize": ["llama-quantize", "quantize"],
    "bench": ["llama-bench"],
}
# The unified `llama` program (CMake target llama-app): the commands that play each role where the tree
# has no standalone program for it, newest name first; which ones a build has is probed, never assumed.
UNIFIED_TARGET = "llama-app"
ROLE_COMMANDS: dict[str, list[str]] = {
    "completion": ["completion", "complete"],
    "speculative_simple": ["speculative-simple"],
    "speculative": ["speculative"],
    "server": ["serve", "server"],
    "quantize": ["quantize"],
    "bench": ["bench"],
}
# The process runner's speculative programs, preferred first: llama-speculative-simple runs every
# --spec-type; llama-speculative (tree drafting) drafts with a draft model only.
SPECULATIVE_ROLES = ("speculative_simple", "speculative")
# The programs that decode the whole prompt in one batch, so -b must hold it (a longer one is refused or
# aborts, in every tree since 2023); llama-completion and llama-server split a prompt into batches.
ONE_BATCH_ROLES = frozenset(SPECULATIVE_ROLES)


class NgramSizeFlags(BaseModel):
    """How one n-gram method's lookup (n) and draft (m) lengths are spelled; None: no such option."""

    n: str | None = None  # e.g. --spec-ngram-simple-size-n
    m: str | None = None  # e.g. --spec-ngram-simple-size-m


class FlagSpelling(BaseModel):
    """How one binary spells the options specbench passes; None when it has no such option."""

    draft_max: str | None = None  # --spec-draft-n-max | --draft-max | --draft
    draft_min: str | None = None  # --spec-draft-n-min | --draft-min
    p_min: str | None = None  # --spec-draft-p-min | --draft-p-min
    ngld: str | None = None  # -ngld | --gpu-layers-draft | --spec-draft-ngl
    spec_type: str | None = None  # --spec-type when the binary has it
    spec_types: list[str] = Field(default_factory=list)  # values --spec-type accepts
    model_draft: str | None = None  # -md
    no_display_prompt: str | None = None  # --no-display-prompt (llama-completion)
    no_conversation: str | None = None  # -no-cnv (llama-completion; chat mode is auto-on with a template)
    no_escape: str | None = None  # --no-escape (prompts are passed verbatim; escapes default on since 2024)
    ngram_sizes: dict[str, NgramSizeFlags] | None = None  # by method; None: probed before specbench knew
    parallel: str | None = None  # -np (llama-server slots)
    cache_ram: str | None = None  # --cache-ram (llama-server's prompt cache in RAM; 0 turns it off)
    no_repack: str | None = None  # --no-repack (weights stay in their type: no AMX/CPU repacked buffers)
    log_verbosity: str | None = None  # -lv (5: debug, the speculative step log parse.span.first_tokens reads)
    options: dict[str, OptionFlag] | None = None  # the tuned options by key; None: probed before them
    # every option name the --help lists, not removed (free arguments are checked against it)
    known: list[str] | None = None

    @property
    def classic_draft(self) -> bool:
        """The binary speculates with ``-md`` alone (every llama.cpp before ``draft-simple``, and forks),
        so ``-md`` is the method and no ``--spec-type`` is passed with it."""
        return bool(self.model_draft and self.draft_max) and DRAFT_SIMPLE not in self.spec_types

    def speculative_argv(
        self, draft: str | None, spec_types: list[str], settings: list[tuple[str | None, object]]
    ) -> list[str]:
        """What makes this binary speculate, spelt once for the plan's cells and the self-test: ``-md
        draft`` (a build probed before specbench read -md: the pin's), each draft setting as
        ``(its flag in this binary, value)``, in order (no flag or a None value: left out), then
        ``--spec-type`` with ``spec_types`` (where it lacks draft-simple, ``-md`` alone is the draft
        method: none)."""
        argv = [self.model_draft or "-md", draft] if draft is not None else []
        for flag, value in settings:
            if value is not None and flag:
                argv += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
        if spec_types != [DRAFT_SIMPLE] or DRAFT_SIMPLE in self.spec_types:
            argv += [self.spec_type or METHOD.spellings[0], ",".join(spec_types)]
        return argv


class BinaryInfo(BaseModel):
    role: str
    name: str
    path: str
    version: str = ""
    flags: FlagSpelling = Field(default_factory=FlagSpelling)
    # the unified `llama` program's command that plays this role (["completion"]); [] for a standalone one
    command: list[str] = Field(default_factory=list)

    @property
    def argv0(self) -> list[str]:
        """What a command line starts with: the program, and its command when it is the unified one."""
        return [self.path, *self.command]


class TypeCheck(BaseModel):
    """The self-test of one weight type: a few tokens decoded from a tiny model of that type."""

    wtype: str  # F16 | Q4_0 | Q4_1 | Q8_0 | Q4_K | IQ4_NL
    outcome: str  # ok | crashed | failed | skipped
    rc: int | None = None  # exit code; None when a signal ended it
    signal: str | None = None  # e.g. SIGSEGV
    reason: str | None = None  # one line: why it is not ok
    wall_s: float | None = None
    workaround_outcome: str | None = None  # the same decode with the workaround's flags, when it was tried


class Workaround(BaseModel):
    """What every invocation of a build gets so it works on this machine, and why."""

    name: str  # repack-off
    flag: str  # the option that turns it on, as the binaries spell it (``--no-repack``)
    reason: str  # one line, for the manifest and notes


class SelfTest(BaseModel):
    """The build checked on one machine (``fingerprint``: specbench.machine.envinfo.fingerprint)."""

    fingerprint: str
    machine: str  # CPU model / GPUs, for people
    checked_at: str
    checks: list[TypeCheck] = Field(default_factory=list)
    workaround: Workaround | None = None
    command: list[str] = Field(default_factory=list)  # one decode's command line (of the last type)
    # each speculative program (by role) run once with the draft method, the tiny model as target
    # and draft: a fork's program can crash whatever the options (ik_llama.cpp 0.1.5's
    # llama-speculative). None: recorded before specbench ran them (``needs_selftest`` re-tests)
    speculative: dict[str, TypeCheck] | None = None

    @property
    def crashed(self) -> list[str]:
        return [c.wtype for c in self.checks if c.outcome == "crashed"]

    def summary(self) -> str:
        """``F16 ok, Q4_0 crashed (SIGSEGV) -> ok with --no-repack, ...; speculative crashed (SIGSEGV)``"""
        parts = []
        for name, c in [*((c.wtype, c) for c in self.checks), *(self.speculative or {}).items()]:
            text = f"{name} {c.outcome}" + (f" ({c.signal or f'rc {c.rc}'})" if c.outcome != "ok" else "")
            if c.workaround_outcome and self.workaround:
                text += f" -> {c.workaround_outcome} with {self.workaround.flag}"
            parts.append(text)
        return ", ".join(parts)


class BuildInfo(BaseModel):
    key: str
    source: str
    commit: str | None = None
    backend: str  # cpu | cuda | metal
    cmake_args: list[str]
    compiler: str = ""
    built_at: str = ""
    bin_dir: str
    binaries: dict[str, BinaryInfo]  # by role
    origin: str = ""  # where the source came from: submodule | sdist | git | marker | tree
    log: str = ""  # the full cmake/compiler log of this build
    probe_version: int = 0  # which probe read the flags (specbench.builder.probe.PROBE_VERSION)
    probed_options: list[str] = Field(default_factory=list)  # the option keys that probe looked for
    ref: str | None = None  # the git ref built (a commit exported from ``source``); None: the tree as it was
    build_s: float | None = None  # wall seconds of the build that made it (configure + compile + probe)
    build_steps: int | None = None  # compile/link steps the build ran (ninja's total; 0: nothing to do)
    work_area: str = ""  # the folder it was compiled in (reused by the next build of these arguments)
    ccache: str | None = None  # the ccache the compiler ran through, when one was found
    selftest: SelfTest | None = None  # the last self-test (specbench.builder.selftest), on this machine
    workarounds_off: bool = False  # `--no-workarounds`: run as built even where the self-test found one
    # every executable target the tree defines (cmake's code model); None: built before specbench kept
    # them. A role missing from ``binaries`` of a build that has them is a program the tree lacks.
    programs: list[str] | None = None

    @property
    def workaround(self) -> Workaround | None:
        """The workaround every invocation of this build gets (None: none found, or turned off)."""
        return None if self.workarounds_off or self.selftest is None else self.selftest.workaround

    def binary(self, role: str) -> BinaryInfo:
        info = self.binaries.get(role)
        names = ", ".join(
            ROLE_NAMES.get(role, [role]) + [f"llama {c}" for c in ROLE_COMMANDS.get(role, [])[:1]]
        )
        if info is None and self.programs is not None:  # the tree was asked: it defines none of them
            raise BuildError(
                f"the llama.cpp tree {self.source} has no {role} program ({names}); no rebuild adds "
                "one: use a tree that has it"
            )
        if info is None or not Path(info.path).is_file():
            raise BuildError(
                f"this llama.cpp build has no {role} binary ({names}); rebuild with `specbench build --force`"
            )
        return info

    def speculative(self, role: str | None = None) -> BinaryInfo:
        """The process runner's speculative program: ``role`` when the config names one, else the
        first of ``SPECULATIVE_ROLES`` the build found."""
        found = role if role is not None else next((r for r in SPECULATIVE_ROLES if r in self.binaries), None)
        if found is not None:
            return self.binary(found)
        names = ", ".join(n for r in SPECULATIVE_ROLES for n in ROLE_NAMES[r])
        names += ", or a `llama` with a speculative command"
        raise BuildError(
            f"the llama.cpp tree {self.source} has no speculative program ({names}), so the process "
            f"runner cannot speculate on it: {self.server_hint('that has one')}"
        )

    def server_hint(self, other: str) -> str:
        """What runs this build's draft method where its process runner cannot: its server, when
        the server takes a draft model, else a llama.cpp tree ``other``."""
        server = self.binaries.get("server")
        if server is not None and server.flags.model_draft:
            return "run it with `runner: server` (its llama-server takes a draft model)"
        return f"use a llama.cpp tree {other}"

    def spec_crash(self, role: str) -> TypeCheck | None:
        """The self-test's run of the ``role`` program with a draft model, when it crashed (a signal)."""
        ran = (self.selftest.speculative or {}) if self.selftest else {}
        check = ran.get(role)
        return check if check is not None and check.outcome == "crashed" else None

    def save(self, path: Path) -> None:
        """Atomically: a crash mid-save leaves the old build.json, never half of one."""
        write_atomic(path, json_text(self, ensure_ascii=False))

    @classmethod
    def load(cls, path: Path) -> BuildInfo:
        try:
            return cls.model_validate(json.loads(path.read_text()))
        except (OSError, ValueError) as exc:
            raise BuildError(f"cannot read {path}: {exc}; rebuild with `specbench build --force`") from exc

    @classmethod
    def load_all(cls, builds_dir: Path) -> list[BuildInfo]:
        """Every readable ``build.json`` in the cache; a broken one is skipped (``--force`` redoes it)."""
        infos = []
        for path in sorted(builds_dir.glob("*/build.json")):
            with suppress(BuildError):
                infos.append(cls.load(path))
        return infos


class CachedBuild(BaseModel):
    """A summary of one build.json in the cache."""

    key: str
    commit: str | None = None
    backend: str
    source: str
    built_at: str = ""
    bin_dir: str
    roles: list[str] = Field(default_factory=list)
    selftest: SelfTest | None = None  # the build's self-test record (on the machine it names)


class EnvReport(EnvInfo):
    """What `specbench env` shows: the machine, and the llama.cpp builds cached on it."""

    builds: list[CachedBuild] = Field(default_factory=list)


def env_report() -> EnvReport:
    infos = BuildInfo.load_all(paths.builds_dir())
    builds = [CachedBuild.model_validate({**i.model_dump(), "roles": sorted(i.binaries)}) for i in infos]
    return EnvReport(**collect(detect_backend).model_dump(), builds=builds)

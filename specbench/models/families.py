"""The curated list of draft models per target family (``draft_families.yaml``, shipped with specbench).

``specbench drafts --family NAME`` takes its candidates from here; each entry is a Hub repo and a
file pattern, so a renamed or removed repo shows up as a candidate with its 404, never silently.
"""

from __future__ import annotations

import re
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from specbench.base.errors import ConfigError

_REPO_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class FamilyDraft(BaseModel):
    """One published draft: ``repo``'s GGUF files matching ``pattern`` (``params``: parameters)."""

    model_config = ConfigDict(extra="forbid")

    repo: str
    pattern: str = Field(min_length=1)
    params: float = Field(gt=0)

    @field_validator("repo")
    @classmethod
    def _owner_name(cls, v: str) -> str:
        if not _REPO_RE.match(v):
            raise ValueError(f"{v!r} is not a Hub repo (owner/name)")
        return v


class Family(BaseModel):
    model_config = ConfigDict(extra="forbid")

    about: str = Field(min_length=1)
    drafts: list[FamilyDraft] = Field(min_length=1)


def load_families(text: str | None = None) -> dict[str, Family]:
    """The shipped list (or ``text``, a YAML document of the same shape), validated."""
    if text is None:
        text = resources.files("specbench.models").joinpath("draft_families.yaml").read_text()
    data = yaml.safe_load(text) or {}
    return {name: Family.model_validate(f) for name, f in (data.get("families") or {}).items()}


def family(name: str) -> Family:
    """One family by name; a ConfigError listing the known names for another."""
    families = load_families()
    if name not in families:
        raise ConfigError(f"no draft family {name!r}; known families: {', '.join(sorted(families))}")
    return families[name]

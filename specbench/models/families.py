"""The curated list of draft models per target family (``draft_families.yaml``, shipped with specbench).

``specbench drafts --family NAME`` takes its candidates from here; each entry is a Hub repo and a
file pattern, so a renamed or removed repo shows up as a candidate with its 404, never silently.
"""

from __future__ import annotations

from importlib import resources

import yaml
from pydantic import Field

from specbench.base.paths import RelativePath
from specbench.models.spec import RepoId, Strict


class FamilyDraft(Strict):
    """One published draft: ``repo``'s GGUF files matching ``pattern`` (``params``: parameters)."""

    repo: RepoId
    pattern: RelativePath
    params: float = Field(gt=0)


class Family(Strict):
    about: str = Field(min_length=1)
    drafts: list[FamilyDraft] = Field(min_length=1)


def load_families(text: str | None = None) -> dict[str, Family]:
    """The shipped list (or ``text``, a YAML document of the same shape), validated."""
    if text is None:
        text = resources.files("specbench.models").joinpath("draft_families.yaml").read_text()
    data = yaml.safe_load(text) or {}
    return {name: Family.model_validate(f) for name, f in (data.get("families") or {}).items()}

"""``expect:``: what someone published for the setup a config reproduces, printed by the report beside
what this machine measured (numbers or text: published figures are often ranges)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

Figure = float | str


class Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)  # docstrings describe fields

    source: str | None = None
    """Who measured it, on what, where it was published."""
    speedup: Figure | None = None
    """Speculative over plain decoding: 1.28 or text ("1.5-1.8x")."""
    acceptance: Figure | None = None
    """A fraction (0.65) or text ("61-72%")."""
    baseline_tps: Figure | None = None
    """Plain decoding, tokens/s."""
    spec_tps: Figure | None = None
    """Speculative decoding, tokens/s."""
    note: str | None = None
    """Anything else (e.g. a time instead of a rate)."""

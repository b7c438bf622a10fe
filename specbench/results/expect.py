"""``expect:``: what someone published for the setup a config reproduces, so `specbench report`
can print it beside what this machine measured. Numbers or text ("1.5-1.8x", "61-72%"), since
published figures are often ranges. The config reads it and the manifest records it, so it lives
here, below both."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

Figure = float | str


class Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)  # docstrings describe fields

    source: str | None = None  # who measured it, on what, where it was published
    """Who measured it, on what, where it was published."""
    speedup: Figure | None = None  # speculative over plain decoding, e.g. 1.28 or "1.5-1.8x"
    """Speculative over plain decoding: 1.28 or text ("1.5-1.8x")."""
    acceptance: Figure | None = None  # a fraction (0.65) or text ("61-72%")
    """A fraction (0.65) or text ("61-72%")."""
    baseline_tps: Figure | None = None  # plain decoding, tokens/s
    """Plain decoding, tokens/s."""
    spec_tps: Figure | None = None  # speculative decoding, tokens/s
    """Speculative decoding, tokens/s."""
    note: str | None = None  # anything else (e.g. a time instead of a rate)
    """Anything else (e.g. a time instead of a rate)."""

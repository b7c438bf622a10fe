"""``expect:``: what someone published for the setup a config reproduces, so `specbench report`
can print it beside what this machine measured. Numbers or text ("1.5-1.8x", "61-72%"), since
published figures are often ranges. The config reads it and the manifest records it, so it lives
here, below both."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

Figure = float | str


class Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str | None = Field(default=None, description="Who measured it, on what, where it was published.")
    speedup: Figure | None = Field(
        default=None, description='Speculative over plain decoding: 1.28 or text ("1.5-1.8x").'
    )
    acceptance: Figure | None = Field(default=None, description='A fraction (0.65) or text ("61-72%").')
    baseline_tps: Figure | None = Field(default=None, description="Plain decoding, tokens/s.")
    spec_tps: Figure | None = Field(default=None, description="Speculative decoding, tokens/s.")
    note: str | None = Field(default=None, description="Anything else (e.g. a time instead of a rate).")

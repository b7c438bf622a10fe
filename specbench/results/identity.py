"""What makes two measurements the same measurement, across runs.

A cell is: role, target and draft model (by sha256, so a renamed file still matches and a
re-quantized one does not), method and its settings, the prompt, and the generation settings
that define the work. compare matches cells on it and history keeps one series per cell.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specbench.results.manifest import RunFacts
from specbench.results.records import Sample


class CellKey(BaseModel):
    """What defines a measurement; equal keys on both sides are compared."""

    model_config = ConfigDict(frozen=True)

    role: str
    target: str  # sha256 (or name:NAME when unknown)
    draft: str | None
    method: str
    draft_max: int | None
    draft_min: int | None
    p_min: float | None
    ngl: int | None
    ngld: int | None
    ngram_size_n: int | None = None
    ngram_size_m: int | None = None
    prompt_id: str
    n_predict: int
    temperature: float
    top_k: int | None
    seed: int
    ctx_size: int
    runner: str = "process"  # a process per sample or a llama-server: not the same measurement
    parallel: int = 1


def cell_key(s: Sample, facts: RunFacts) -> CellKey:
    g = s.generation
    return CellKey(
        role=s.role, target=facts.model_id(s.model), draft=facts.model_id(s.draft), method=s.method,
        draft_max=s.draft_max, draft_min=s.draft_min, p_min=s.p_min, ngl=s.ngl, ngld=s.ngld,
        ngram_size_n=s.ngram_size_n, ngram_size_m=s.ngram_size_m,
        prompt_id=s.prompt_id, n_predict=g.n_predict, temperature=g.temperature, top_k=g.top_k,
        seed=g.seed, ctx_size=g.ctx_size, runner=s.runner, parallel=s.parallel,
    )  # fmt: skip

"""What makes two measurements the same measurement, across runs (compare's match, history's series).

Role, models by sha256 (a renamed file matches, a re-quantized one does not), every other axis but
the pair name, the prompt and the generation settings that define the work.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from specbench.results import cell
from specbench.results.manifest import RunFacts
from specbench.results.records import Sample

# made from the cell's fields at import (create_model): its fields are unknown to the type checker
_Axes: Any = cell.model_with_cell(
    "_Axes", "Every axis but the pair, models as ids.", {"model": "target"}, cell.RUN_LOCAL
)


class CellKey(_Axes):
    """What defines a measurement; equal keys on both sides are compared."""

    model_config = ConfigDict(frozen=True)

    role: str  # target and draft (from the axes) hold sha256 ids (or name:NAME when unknown)
    prompt_id: str
    n_predict: int
    temperature: float
    top_k: int | None
    seed: int
    ctx_size: int


def cell_key(s: Sample, facts: RunFacts) -> CellKey:
    g = s.generation
    axes = {f: getattr(s, f) for f in cell.CELL_FIELDS if f not in (*cell.RUN_LOCAL, *cell.MODEL_FIELDS)}
    return CellKey(
        role=s.role, target=facts.model_id(s.model), draft=facts.model_id(s.draft), **axes,
        prompt_id=s.prompt_id, n_predict=g.n_predict, temperature=g.temperature, top_k=g.top_k,
        seed=g.seed, ctx_size=g.ctx_size,
    )  # fmt: skip

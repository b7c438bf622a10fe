"""``specbench drafts --measure K``: download the K best-ranked drafts and measure each with the target.

The drafts come through the ordinary model stage (resumed, checked, cached downloads) and are
measured in one ordinary run folder: the baseline and each pair at its best draft length over a few
prompts, with ``repetitions: auto`` so each speedup ends with its 95% interval.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from specbench.analysis.cells import ALL
from specbench.analysis.report import aggregate
from specbench.analysis.speedmodel import model_speedup
from specbench.base.errors import ModelError
from specbench.base.llamaopts import DRAFT_LENGTH
from specbench.execute import benchmark, preparation
from specbench.models.hf import fetch_hf
from specbench.models.spec import hub_source
from specbench.plan.config import Config, config_from_mapping
from specbench.tune.draftmodels import DraftRow
from specbench.tune.drafts import DraftsResult

PROMPT_IDS = ["code-02", "extr-05", "summ-03"]  # the quickstart's: code rewrite, extraction, summary
N_PREDICT = 128


class Measured(BaseModel):
    """One measured candidate: the speedup at its draft length, with its 95% interval."""

    candidate: str
    draft_max: int
    predicted_speedup: float | None  # the speed model's, at the acceptance the run measured
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    acceptance: float | None
    tokens_per_pass: float | None


# the figures a measured candidate takes from its cell's report row (the same names)
READ = ("speedup", "speedup_ci_low", "speedup_ci_high", "acceptance", "tokens_per_pass")


def local_file(row: DraftRow) -> Path:
    """A candidate's file on this machine: its path, or downloaded from the Hub (resumable, checked)."""
    if row.path is not None:
        return row.path
    if row.source is None:
        raise ModelError(f"{row.candidate} has no file to measure")
    name, _, revision = row.source.rpartition("@")
    parts = name.split("/")
    src = hub_source(repo="/".join(parts[:2]), file="/".join(parts[2:]), revision=revision)
    return fetch_hf(src).files[0]


def _predicted(target: DraftRow, row: DraftRow, tokens_per_pass: float | None) -> float | None:
    """The speed model's speedup with drafts' costs, at the tokens per pass the run measured."""
    if target.pass_costs is None or row.pass_costs is None or not row.draft_max or tokens_per_pass is None:
        return None
    return model_speedup(target.pass_costs, row.pass_costs, row.draft_max, tokens_per_pass)


def measure_config(result: DraftsResult, chosen: list[DraftRow], files: dict[str, Path], base: Config | None,
                   backend: str, overrides: dict[str, Any] | None = None) -> Config:  # fmt: skip
    """The run config: the target and each chosen draft as a pair at its draft length (``overrides``:
    top-level keys replaced)."""
    models = {"target": {"path": str(files["target"])}}
    pairs = {}
    for i, row in enumerate(chosen, 1):
        models[f"draft{i}"] = {"path": str(files[row.candidate])}
        pairs[f"draft{i}"] = {"target": "target", "draft": f"draft{i}"}
    # the config's llama.cpp (one build or a list) and prompts, else the pricing build's backend
    if base is None:
        kept = {"llama_cpp": {"backend": backend}, "prompts": {"suite": "builtin", "ids": PROMPT_IDS}}
    else:
        kept = base.model_dump(mode="json", include={"llama_cpp", "prompts"}, exclude_none=True)
    data: dict[str, Any] = {
        "name": "drafts-measure",
        **kept,
        "models": models,
        "pairs": pairs,
        "sweep": {DRAFT_LENGTH.key: sorted({r.draft_max for r in chosen if r.draft_max})},  # rest: defaults
        "generation": {"n_predict": N_PREDICT},
        "repetitions": "auto",
        "max_repetitions": 6,
    }
    data.update(overrides or {})
    return config_from_mapping(data, Path("."), "drafts --measure")


def measure(
    result: DraftsResult,
    k: int,
    run_dir: Path | None,
    base: Config | None,
    backend: str,
    progress: Any = None,
    note: Callable[[str], None] = lambda line: None,
    overrides: dict[str, Any] | None = None,
) -> tuple[Path, list[Measured]]:
    """Download and measure the ``k`` best-ranked candidates into ``run_dir`` (None: a new folder
    under results/); returns the folder and the candidates by measured speedup."""
    chosen = [r for r in result.rows if r.rank is not None][:k]
    if not chosen:
        raise ModelError("no candidate is ranked (none is compatible and priced), so none can be measured")
    files = {"target": local_file(result.target)}
    for row in chosen:
        note(f"fetching {row.candidate}" if row.path is None else f"using {row.path}")
        files[row.candidate] = local_file(row)
    cfg = measure_config(result, chosen, files, base, backend, overrides)
    prepared = preparation.prepare(cfg)
    run_dir = run_dir if run_dir is not None else benchmark.new_run_dir(cfg, None)
    note(f"measuring {len(chosen)} draft(s) into {run_dir}")
    benchmark.run_benchmark(prepared, run_dir, progress=progress)
    rows = [r for r in aggregate([run_dir]) if r.category == ALL and r.method == "draft"]
    out = []
    for i, row in enumerate(chosen, 1):
        got = next((r for r in rows if r.pair == f"draft{i}" and r.draft_max == row.draft_max), None)
        read = {name: getattr(got, name, None) for name in READ}  # all None: the pair measured nothing
        read["predicted_speedup"] = _predicted(result.target, row, read["tokens_per_pass"])
        out.append(Measured(candidate=row.candidate, draft_max=row.draft_max or 0, **read))
    return run_dir, sorted(out, key=lambda m: -(m.speedup or 0.0))

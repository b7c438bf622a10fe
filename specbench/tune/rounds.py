"""A round of ``specbench tune``: the plan it runs and what its run folder says afterwards.

A round runs exactly the command lines a sweep of the same settings runs, less the draft-alone runs
and the cells outside the round, as one repetition; the search reads back the report's rows.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from specbench.analysis.cells import ALL, ReportRow
from specbench.analysis.report import aggregate
from specbench.base.llamaopts import BY_KEY
from specbench.execute import preparation
from specbench.plan.config import Config
from specbench.plan.invocation import Plan
from specbench.plan.sweep import make_plan
from specbench.results.folder import samples_path
from specbench.results.samplelog import load_samples
from specbench.tune.candidates import Setting

_DRAFT_SCOPES = ("draft", "draft_context")  # a round sweeps the draft's settings; the target's ngl stays


def round_config(base: Config, settings: list[Setting], reps: int, warmup: int) -> Config:
    """The config of a round: the base config swept over just the values of ``settings``."""
    drafts = [f.name for f in fields(Setting) if f.name in BY_KEY and BY_KEY[f.name].scope in _DRAFT_SCOPES]
    sweep = base.sweep.model_copy(update={k: sorted({getattr(s, k) for s in settings}) for k in drafts})
    return base.model_copy(update={"sweep": sweep, "repetitions": reps, "warmup": warmup})


def invocations(cfg: Config, prepared: preparation.Prepared, settings: list[Setting], rep: int = 0) -> Plan:
    """The round's plan (the config's runner) without draft-alone runs and cells outside ``settings``,
    as repetition ``rep``."""
    wanted = {s.key() for s in settings}
    plan = make_plan(cfg, prepared.build, prepared.models, prepared.prompts, repetitions=1)
    return plan.only(
        [
            inv if inv.warmup else inv.model_copy(update={"repetition": rep})
            for inv in plan.invocations
            if inv.role == "baseline" or (inv.role == "speculative" and Setting.of(inv).key() in wanted)
        ]
    )


def draft_rows(run_dir: Path, combo: dict | None = None) -> dict[tuple, ReportRow]:
    """The draft rows of the run by setting (``combo``: only those of these llama.cpp options)."""
    rows = [r for r in aggregate([run_dir]) if r.category == ALL and r.method == "draft"
            and all(getattr(r, k) == v for k, v in (combo or {}).items())]  # fmt: skip
    return {Setting.of(r).key(): r for r in rows}


def nothing_measured(run_dir: Path) -> str:
    """Why tune stops after a probe without a speedup: the commonest reason, and where the rest are."""
    samples = load_samples(run_dir)
    bad = [s for s in samples if not (s.valid and s.status == "ok")]
    reasons = [s.invalid_reason for s in bad if s.invalid_reason]
    common = max(set(reasons), key=reasons.count) if reasons else None
    why = f"{len(bad)} of {len(samples)} samples failed, timed out or never speculated"
    why += f" ({reasons.count(common)} with: {common})" if common else ""
    return (
        f"tune's probe measured no speedup, so there is nothing to tune: {why}; see {samples_path(run_dir)}"
    )


def kv_depth(run_dir: Path, n_predict: int) -> int:
    """Tokens in the KV cache halfway through a generation: the prompt plus half the output."""
    prompt = [s.metrics.encoded.tokens for s in load_samples(run_dir)
              if s.metrics and s.metrics.encoded and s.metrics.encoded.tokens]  # fmt: skip
    return int(sum(prompt) / len(prompt) if prompt else 0) + n_predict // 2

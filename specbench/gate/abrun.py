"""A/B runs of two llama.cpp builds (``specbench ab``, each step of ``specbench bisect``): the config
with its builds replaced, how a failure before the gate judges is reported, and what the notes of
their rounds say. The CLI measures and prints; these decide."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.base.errors import BuildError, SpecbenchError
from specbench.base.formats import json_text
from specbench.gate.ab import BuildChoiceError

if TYPE_CHECKING:
    from specbench.execute.benchmark import RunSummary
    from specbench.plan.config import Config

BuildSpec = tuple[str, str | None, str | None]  # label, source tree, git ref


def _build_entries(cfg: Config, specs: Sequence[BuildSpec]) -> list[dict]:
    """The config's `llama_cpp` as a list of labelled builds (backend and cmake args kept)."""
    template = cfg.builds[0]
    common = template.model_dump(mode="json", exclude={"label", "source", "ref"}, exclude_none=True)
    own = str(template.source) if template.source else None
    entries = []
    for label, source, ref in specs:
        where = {"source": source or own, "ref": ref}  # each only when given
        entries.append({"label": label, **common, **{k: v for k, v in where.items() if v}})
    return entries


def load_builds_config(
    config: Path, sets: list[str], specs: Sequence[BuildSpec], typed: Mapping[str, str] | None = None
) -> Config:
    """CONFIG with its ``llama_cpp`` replaced by these builds (label, source, ref), checked before
    anything is built; ``typed``: each label's option as the user wrote it, named when git lacks a ref."""
    from specbench.plan.config import load_config

    cfg = load_config(config, sets)
    _check_refs(cfg, specs, typed or {})
    override = "llama_cpp=" + json_text(_build_entries(cfg, specs), None, redacted=False)
    return load_config(config, [*sets, override])


def _check_refs(cfg: Config, specs: Sequence[BuildSpec], typed: Mapping[str, str]) -> None:
    from specbench.builder.gitref import resolve_ref
    from specbench.builder.source import pinned_checkout

    own = cfg.builds[0].source
    for label, source, ref in specs:
        if ref is None or label not in typed:
            continue
        tree = source or (cfg.base_dir / Path(own).expanduser() if own is not None else pinned_checkout())
        if tree is None:
            raise BuildChoiceError(
                f"{typed[label]}: @{ref} alone needs a git checkout to find it in, and the config has "
                f"no llama_cpp.source (the pinned tree is no git checkout); write SRC@{ref}, "
                f"e.g. ~/llama.cpp@{ref}"
            )
        try:
            resolve_ref(tree, ref)
        except BuildError as exc:
            raise BuildChoiceError(f"{typed[label]}: {exc}") from exc


@contextmanager
def measuring_is_input():
    """Until the gate has judged, whatever stops ``ab`` or ``bisect`` (a config, a ref, a build that
    does not compile, a busy machine) is not a regression: exit 2, never the gate's 1."""
    try:
        yield
    except SpecbenchError as exc:
        if exc.exit_code == 1:
            exc.exit_code = 2
        raise


def round_notes(notes: list[str], cfg: Config, budget_s: float | None) -> list[str]:
    """The plan's notes with the rounds of ``ab`` said in place of those of ``run`` (the precision
    rule of ``repetitions: auto``, max_repetitions "ignored" with a fixed count): neither applies."""
    from specbench.execute.preparation import ignored_settings

    run_only = set(ignored_settings(cfg))
    kept = [n for n in notes if n not in run_only and not n.startswith("repetitions: auto:")]
    most = cfg.round_limit(budget_s is not None)
    if budget_s is None:
        limit = f"up to {most} (max_repetitions)"
    elif most != cfg.most_repetitions:  # max_repetitions not set: the budget is the limit
        limit = f"until --budget {budget_s:g} s is spent (at most {most})"
    else:
        limit = f"up to {most} (max_repetitions) or --budget {budget_s:g} s"
    return [
        *kept,
        f"round 1 is {cfg.first_repetitions} repetition{'s' * (cfg.first_repetitions != 1)}; cells the "
        f"paired gate leaves undecided get one more repetition a round, {limit}",
    ]


def rounds_end(summary: RunSummary, budget_s: float | None, failed: bool = False) -> str:
    """Why an undecided cell got no more pairs: the budget, a failed cell, or max_repetitions."""
    extra = f"{summary.rounds} round{'s' * (summary.rounds != 1)} after the first"
    if summary.budget_spent:
        return f"--budget {budget_s:g} s spent ({extra})"
    if failed:
        return f"not measured further once a cell failed, which is the verdict whatever they say ({extra})"
    return f"max_repetitions ({summary.most_repetitions}) reached ({extra}; --set max_repetitions=N for more)"

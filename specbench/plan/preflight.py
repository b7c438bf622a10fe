"""Which methods each pair can run, from its models' GGUF headers: refused before anything runs.

A pinned method that does not fit the pair's files is refused; a ``sweep.method`` entry is skipped
with a note for the pairs it does not fit, and refused when it fits none. Files not fetched yet (a
dry run) are not checked; what each method needs is ``base.methods``'."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from specbench.base.errors import ConfigError
from specbench.base.methods import head_archs, method_for_arch, method_of, parts
from specbench.models.meta import SpecFacts, read_spec_facts
from specbench.plan.config import Config
from specbench.plan.sections import PairConfig

MTP_ARCHS = "qwen3next, deepseek2, glm4moe and others"


def model_file(model: object) -> Path:
    """Where a model is: a path, or a models.ResolvedModel or execute.PlannedModel (a dry run's: no file)."""
    return Path(model if isinstance(model, (str, Path)) else getattr(model, "path", ""))


def read_facts(config: Config, models: Mapping[str, object]) -> dict[str, SpecFacts]:
    """The speculative facts of every model a pair names whose file is here (a dry run may lack some)."""
    names = dict.fromkeys(n for p in config.pairs.values() for n in (p.target, p.draft) if n is not None)
    files = {name: model_file(models.get(name)) for name in names}
    return {name: read_spec_facts(path) for name, path in files.items() if path.is_file()}


def misfit(method: str, pair: PairConfig, facts: Mapping[str, SpecFacts]) -> str | None:
    """Why ``method`` cannot run on ``pair``'s files, in one line; None when it can (or is unknown)."""
    draft = facts.get(pair.draft) if pair.draft is not None else None
    for part in parts(method):
        m = method_of(part)
        arch = draft.architecture if draft is not None else None
        if m.draft_arch and draft is not None:
            if arch != m.draft_arch:
                fits = method_for_arch(arch) if arch else None
                return (
                    f"{part} needs {m.head} (GGUF architecture {m.draft_arch}) as the pair's draft; "
                    f"{pair.draft} is architecture {arch}" + (f" (for it: {fits})" if fits else "")
                )
            if m.markov_head and not draft.markov_head:
                return (
                    f"{part} needs {m.head} (architecture {arch} with a markov_w1 head); {pair.draft} is "
                    f"architecture {arch} without one: use {method_for_arch(arch)}"
                )
        if m.draft_model and not m.draft_arch and arch in head_archs():
            fits = method_for_arch(arch)
            return (
                f"{part} ({m.spec_type}) needs a complete draft model; {pair.draft} is architecture {arch} "
                f"({method_of(fits).head if fits else 'a head'}, which cannot generate alone): use {fits}"
            )
        if m.target_layers:
            name = pair.draft if pair.draft is not None and pair.method is not None else pair.target
            own = facts.get(name)
            if own is not None and own.nextn_layers <= 0:
                role = "sidecar draft" if name == pair.draft else "target"
                return (
                    f"{part} needs a {role} with next-token-prediction (MTP) layers "
                    f"({own.architecture}.nextn_predict_layers > 0, as in {MTP_ARCHS}); {role} {name} "
                    f"is architecture {own.architecture} and has none"
                )
    return None


def pair_methods(config: Config, facts: Mapping[str, SpecFacts], notes: list[str]) -> dict[str, list[str]]:
    """The methods each pair runs; ConfigError for a pinned misfit or one that fits no pair."""
    runs: dict[str, list[str]] = {}
    why_not: dict[str, str] = {}
    for pname, pair in config.pairs.items():
        if pair.method is not None:
            reason = misfit(pair.method, pair, facts)
            if reason is not None:
                raise ConfigError(f"pair {pname!r}: {reason}")
            runs[pname] = [pair.method]
            continue
        runs[pname] = []
        for method in config.sweep.method:
            reason = misfit(method, pair, facts)
            if reason is None:
                runs[pname].append(method)
            else:
                why_not.setdefault(method, f"pair {pname!r}: {reason}")
                notes.append(f"pair {pname} does not run {method}: {reason}")
    unread = sorted({n for p in config.pairs.values() for n in (p.target, p.draft) if n and n not in facts})
    if unread and any(p.method is None for p in config.pairs.values()) and len(config.sweep.method) > 1:
        notes.append(
            f"not cached: {', '.join(unread)}; every pair is shown with every sweep.method, a run "
            "leaves out the methods a pair's GGUFs do not fit (read before anything runs)"
        )
    for method, reason in why_not.items():
        if not any(method in ms for ms in runs.values()):
            raise ConfigError(f"sweep.method {method} fits no pair; {reason}")
    return runs

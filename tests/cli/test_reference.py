"""The generated reference: every config key and every command option has a description, and the
pages list all of them (a key or option added without one fails here)."""

import typer

from specbench.cli import app
from specbench.cli.reference import cli_reference, commands, config_keys, config_reference, parameters
from specbench.plan.config import Config, config_schema


def undocumented_keys(schema: dict | None = None) -> list[str]:
    """Config keys without a description: the reference would show them blank."""
    return [key for key, prop, _ in config_keys(schema) if not prop.get("description", "").strip()]


def undocumented_options(app: typer.Typer) -> list[str]:
    """Commands without help and options or arguments without help, as ``specbench run --out``."""
    missing = [path for path, cmd in commands(app) if not (cmd.help or "").strip()]
    for path, cmd in commands(app):
        missing += [f"{path} {p.opts[0] if p.opts else p.name}" for p in parameters(cmd)
                    if not (getattr(p, "help", None) or "").strip()]  # fmt: skip
    return missing


def test_every_config_key_has_a_description():
    assert undocumented_keys() == []


def test_every_command_and_option_has_help():
    assert undocumented_options(app) == []


def test_a_key_without_a_description_is_found():
    schema = config_schema()
    del schema["$defs"]["SweepConfig"]["properties"]["draft_max"]["description"]
    del schema["properties"]["warmup"]["description"]
    assert undocumented_keys(schema) == ["sweep.draft_max", "warmup"]


def test_an_option_without_help_is_found():
    toy = typer.Typer(help="A toy app.")

    @toy.command()
    def go(
        fast: bool = typer.Option(False, "--fast"), n: int = typer.Option(1, "--n", help="How many.")
    ) -> None:
        """Go."""

    @toy.command()
    def stop() -> None:
        pass

    assert sorted(undocumented_options(toy)) == ["specbench go --fast", "specbench stop"]


def test_the_config_reference_lists_every_key():
    page = config_reference()
    keys = [key for key, _, _ in config_keys()]
    top = {f.alias or name for name, f in Config.model_fields.items() if not f.exclude}
    assert top <= set(keys)
    assert {"models.NAME.hf.repo", "pairs.NAME.draft", "sweep.draft_max", "generation.seed",
            "llama_cpp.label", "expect.speedup", "runs_on.ngl"} <= set(keys)  # fmt: skip
    for key in keys:
        assert f"| `{key}` |" in page


def test_the_cli_reference_lists_every_command_and_option():
    page = cli_reference(app)
    paths = [path for path, _ in commands(app)]
    assert {"specbench run", "specbench models pull", "specbench baseline save", "specbench schema"} <= set(
        paths
    )
    for path, cmd in commands(app):
        assert f"# `{path}`" in page
        for param in cmd.params:
            for opt in param.opts if param.param_type_name == "option" else []:
                assert opt in page, (path, opt)

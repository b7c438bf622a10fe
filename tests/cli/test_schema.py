"""`specbench schema`: the file editors read is what the command prints, and a validator with it
refuses what the loader refuses (`make lint` runs check-jsonschema with it over every shipped config)."""

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from specbench.base.errors import ConfigError
from specbench.cli import app
from specbench.plan.config import load_config
from specbench.plan.shipped import SCHEMA as SCHEMA_NAME

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = f"configs/{SCHEMA_NAME}"  # where the shipped configs' `$schema=...` line points
SCHEMA = ROOT / SCHEMA_FILE
SHIPPED = sorted([*(ROOT / "configs").glob("*.yaml"), *(ROOT / "configs" / "seeds").glob("*.yaml")])


def check(path: Path) -> list[str]:
    """What a JSON Schema validator (the library check-jsonschema uses) says against ``path``."""
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]


def test_the_schema_file_is_what_the_command_prints():
    out = CliRunner().invoke(app, ["schema"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == json.loads(SCHEMA.read_text()), "run: specbench schema > " + SCHEMA_FILE
    assert out.stdout == SCHEMA.read_text()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_configs_point_editors_at_the_schema(path):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    assert (path.parent / first.split("$schema=", 1)[1]).resolve() == SCHEMA.resolve()


def _quickstart() -> dict:
    return yaml.safe_load((ROOT / "configs" / "quickstart.yaml").read_text())


def _variant(tmp_path: Path, change) -> Path:
    data = _quickstart()
    change(data)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


BAD = {
    "misspelt top-level key": (lambda d: d.update(sweeep=d.pop("sweep")), "sweeep"),
    "misplaced key": (lambda d: d["generation"].update(draft_max=4), "draft_max"),
    "draft_max below 1": (lambda d: d["sweep"].update(draft_max=[0]), "0"),
    "unknown runner": (lambda d: d.update(runner="thread"), "thread"),
    "repetitions as text": (lambda d: d.update(repetitions="many"), "many"),
    "unknown backend": (lambda d: d["llama_cpp"].update(backend="rocm"), "rocm"),
}


@pytest.mark.parametrize("name", BAD)
def test_the_schema_refuses_what_the_loader_refuses(tmp_path, name):
    change, word = BAD[name]
    path = _variant(tmp_path, change)
    errors = check(path)
    assert errors and any(word in e for e in errors), errors
    with pytest.raises(ConfigError):
        load_config(path)


def test_the_unchanged_variant_passes_both(tmp_path):
    """The round trip through yaml.safe_dump is not what the refusals above are about."""
    path = _variant(tmp_path, lambda d: None)
    assert check(path) == []
    load_config(path)

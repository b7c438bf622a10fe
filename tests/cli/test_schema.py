"""`specbench schema`: the file editors read is what the command prints, and check-jsonschema with it
accepts every shipped config and refuses what the loader refuses."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from specbench.base.errors import ConfigError
from specbench.plan.config import load_config
from specbench.plan.schema import SCHEMA_FILE

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / SCHEMA_FILE
SHIPPED = sorted([*(ROOT / "configs").glob("*.yaml"), *(ROOT / "configs" / "seeds").glob("*.yaml")])
CHECK = Path(sys.executable).parent / "check-jsonschema"


def check(*files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(CHECK), "--schemafile", str(SCHEMA), *map(str, files)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_schema_file_is_what_the_command_prints():
    out = subprocess.run(
        [sys.executable, "-m", "specbench", "schema"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(SCHEMA.read_text()), "run: specbench schema > " + SCHEMA_FILE
    assert out.stdout == SCHEMA.read_text()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_configs_point_editors_at_the_schema(path):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    assert (path.parent / first.split("$schema=", 1)[1]).resolve() == SCHEMA.resolve()


def test_check_jsonschema_accepts_every_shipped_config():
    out = check(*SHIPPED)
    assert out.returncode == 0, out.stdout + out.stderr


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
    out = check(path)
    assert out.returncode == 1 and word in out.stdout, out.stdout + out.stderr
    with pytest.raises(ConfigError):
        load_config(path)


def test_the_unchanged_variant_passes_both(tmp_path):
    """The round trip through yaml.safe_dump is not what the refusals above are about."""
    path = _variant(tmp_path, lambda d: None)
    assert check(path).returncode == 0
    load_config(path)

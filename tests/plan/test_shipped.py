"""The shipped configs are package data (an install has them, not only a clone), listed and copied
by name, and found by name where a CONFIG names no file."""

import fnmatch
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest

from specbench.base.errors import InputError
from specbench.plan.config import load_config
from specbench.plan.shipped import SCHEMA, copy_shipped, find_shipped, shipped_configs, shipped_dir

REPO = Path(__file__).resolve().parents[2]


def test_every_shipped_config_is_package_data():
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    on_disk = [p.relative_to(REPO) for p in (REPO / "configs").rglob("*") if p.is_file()]

    def packaged_as(
        f: Path,
    ) -> bool:  # configs/seeds/x.yaml is file x.yaml of package specbench.configs.seeds
        package = ".".join(("specbench", *f.parent.parts))
        return any(fnmatch.fnmatch(f.name, pat) for pat in data.get(package, []))

    assert on_disk and all(packaged_as(f) for f in on_disk), [f for f in on_disk if not packaged_as(f)]
    packaged = Path(str(files("specbench") / "configs"))
    assert (packaged / "quickstart.yaml").is_file() and (packaged / SCHEMA).is_file()
    assert {c.name for c in shipped_configs()} >= {"quickstart", "ci", "seeds/000-llama3-70b-4090"}


def test_a_name_finds_the_shipped_config_and_nothing_outside_it():
    quickstart = shipped_dir() / "quickstart.yaml"
    assert find_shipped("quickstart") == find_shipped("configs/quickstart.yaml") == quickstart
    assert find_shipped("quickstart.yaml") == quickstart
    assert find_shipped("seeds/000-llama3-70b-4090") == shipped_dir() / "seeds" / "000-llama3-70b-4090.yaml"
    assert find_shipped("../configs/quickstart") is None and find_shipped("nosuch") is None


def test_a_config_named_by_name_loads_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_config("quickstart").path == shipped_dir().resolve() / "quickstart.yaml"
    assert load_config("configs/quickstart.yaml").name == "quickstart"
    with pytest.raises(Exception, match=r"does not exist; name a file, or a shipped config \(.*quickstart"):
        load_config("nosuch.yaml")


def test_copy_writes_the_config_and_its_schema_and_keeps_what_is_there(tmp_path):
    written = copy_shipped("quickstart", tmp_path)
    assert written == [tmp_path / "quickstart.yaml", tmp_path / SCHEMA]
    with pytest.raises(InputError, match="exists; choose another DEST, or --force"):
        copy_shipped("quickstart", tmp_path / "quickstart.yaml")
    assert copy_shipped("quickstart", tmp_path, force=True) == [tmp_path / "quickstart.yaml"]
    seed = copy_shipped("seeds/000-llama3-70b-4090", tmp_path / "mine.yaml")[0]
    assert seed.read_text().startswith("# yaml-language-server: $schema=./specbench.schema.json")
    with pytest.raises(InputError, match=r"no shipped config 'nope'; `specbench configs list` shows them"):
        copy_shipped("nope")

"""`specbench configs list|copy`, and `run NAME --dry-run` from a folder that is no clone."""

import json

from specbench.base.errors import ExitCode
from tests.helpers.cli import specbench


def test_list_names_every_shipped_config(tmp_path):
    rows = json.loads(specbench("configs", "list", "-f", "json", cwd=tmp_path).stdout)
    quick = next(r for r in rows if r["name"] == "quickstart")
    assert quick["about"].startswith("specbench quickstart") and quick["file"].endswith("quickstart.yaml")


def test_copy_then_a_second_copy_is_refused_in_one_line(tmp_path):
    first = specbench("configs", "copy", "quickstart", cwd=tmp_path)
    assert first.returncode == 0 and (tmp_path / "quickstart.yaml").is_file(), first.stderr
    again = specbench("configs", "copy", "quickstart", cwd=tmp_path)
    assert again.returncode == ExitCode.BAD_INPUT and again.stderr.startswith("error: quickstart.yaml exists")


def test_run_a_shipped_config_by_name_from_a_temp_folder(tmp_path, llama_build):
    for name in ("quickstart", "configs/quickstart.yaml"):
        r = specbench("run", name, "--dry-run", cwd=tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout.splitlines()[-1].startswith("# estimated time:")

"""``ab``'s builds replace the config's ``llama_cpp``: a ref git does not know is blamed on the
option the user typed, never on the ``llama_cpp[0].ref`` key the replacement wrote."""

import subprocess
from pathlib import Path

import pytest

from specbench.base.errors import ExitCode, InputError
from specbench.gate.ab import parse_build_spec
from specbench.gate.abrun import load_builds_config

CI = Path(__file__).resolve().parents[2] / "configs" / "ci.yaml"


def _repo(path: Path) -> Path:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(path.parent)}  # fmt: skip
    path.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "c"], cwd=path, check=True, env=env)
    return path


def test_an_unknown_ref_names_the_option_as_typed(tmp_path):
    repo = _repo(tmp_path / "llama")
    typed = {"base": f"--base {repo}@nosuchref", "head": f"--head {repo}@HEAD"}
    specs = [
        ("base", *parse_build_spec(f"{repo}@nosuchref", "--base")),
        ("head", *parse_build_spec(f"{repo}@HEAD", "--head")),
    ]
    with pytest.raises(InputError) as exc:
        load_builds_config(CI, [], specs, typed)
    message = str(exc.value)
    assert message.startswith(f"--base {repo}@nosuchref: ref 'nosuchref' is not a commit")
    assert "llama_cpp" not in message and exc.value.exit_code == ExitCode.BAD_INPUT


def test_a_bare_ref_without_a_tree_to_find_it_in_names_the_option(tmp_path, monkeypatch):
    monkeypatch.setattr("specbench.builder.source.pinned_checkout", lambda: None)
    typed = {"base": "--base @nosuchref", "head": "--head @HEAD"}
    specs = [("base", None, "nosuchref"), ("head", None, "HEAD")]
    with pytest.raises(InputError, match=r"^--base @nosuchref: @nosuchref alone needs a git checkout") as exc:
        load_builds_config(CI, [], specs, typed)
    assert "llama_cpp[0]" not in str(exc.value)

"""The config loader bounds what a YAML document may expand to (issue 58: ten lines of nested
aliases, a "billion laughs", hung `run`, `--dry-run` and `plan` for over a minute at depth 9)."""

from __future__ import annotations

import pytest
import yaml

from specbench.base.errors import ConfigError
from specbench.plan import configtext
from specbench.plan.configtext import MAX_VALUES, apply_override, parse_yaml


def bomb(depth: int = 9, width: int = 9) -> str:
    """``depth`` levels of ``width`` aliases each: width**depth values once expanded."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, depth + 1)]
    return "\n".join([*lines, f"name: *a{depth}"]) + "\n"


@pytest.fixture
def nothing_expands(monkeypatch):
    """Counts what is built or walked from the composed nodes: a refusal must come before any of it."""
    seen = {"constructed": 0, "walked": 0}
    construct = yaml.constructor.BaseConstructor.construct_object
    walk = configtext._check_duplicates

    def counting_construct(self, node, deep=False):
        seen["constructed"] += isinstance(self, configtext._NoDuplicatesLoader)  # a config's loader
        return construct(self, node, deep)

    def counting_walk(*args, **kwargs):
        seen["walked"] += 1
        return walk(*args, **kwargs)

    monkeypatch.setattr(yaml.constructor.BaseConstructor, "construct_object", counting_construct)
    monkeypatch.setattr(configtext, "_check_duplicates", counting_walk)
    return seen


def test_a_billion_laughs_is_refused_before_it_expands(nothing_expands):
    with pytest.raises(ConfigError) as info:
        parse_yaml(bomb(9), "bomb.yaml")
    message = str(info.value)
    assert (
        message.startswith("bomb.yaml: ") and f"over {MAX_VALUES:,} values" in message and "\n" not in message
    )
    assert nothing_expands == {"constructed": 0, "walked": 0}


def test_the_bound_is_far_above_a_config_with_aliases():
    data = parse_yaml(bomb(depth=2, width=9), "small.yaml")  # 9**3 values through aliases: fine
    assert len(data["name"]) == 9 and data["name"][0][0][0] == "lol"
    assert 9**5 < MAX_VALUES < 9**6  # the depth-8 bomb (9**8) is far beyond it


def test_a_bomb_in_a_set_value_is_refused_too(nothing_expands):
    value = bomb(8).replace("\n", ", ").rstrip(", ")
    with pytest.raises(ConfigError) as info:
        apply_override({}, "name={" + value + "}")
    assert "over" in str(info.value) and info.value.args[0].startswith("--set ")
    assert nothing_expands["constructed"] == 0


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a: &x [1, *x]\n", ["x.yaml:1:", "a loop"]),  # an alias inside what it names
        ("a: " + "[" * 150 + "]" * 150 + "\n", ["nested over"]),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", ["nested too deeply"]),  # past the parser's own recursion
    ],
)
def test_loops_and_deep_nesting_are_one_line(text, words):
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "x.yaml")
    for word in words:
        assert word in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("command", [["run"], ["run", "--dry-run"], ["plan"], ["models", "pull"]])
def test_every_command_that_reads_a_config_refuses_the_bomb(tmp_path, command, nothing_expands):
    """The commands read configs through the one loader: each refuses in one line, before expanding."""
    from tests.helpers.cli import specbench

    (tmp_path / "bomb.yaml").write_text(bomb(9))
    proc = specbench(*command, "bomb.yaml", cwd=tmp_path, env={"SPECBENCH_HOME": str(tmp_path / "h")})
    err = proc.stderr.strip()
    assert proc.returncode == 2 or proc.returncode == 1, err
    assert err.startswith("error: bomb.yaml: ") and "over 100,000 values" in err and "\n" not in err, err
    assert nothing_expands["constructed"] == 0 and not (tmp_path / "results").exists()

"""`--help` names what an option takes in words (DIR, METRIC), not Python types (<path>, <str>)."""

import re

import pytest

from tests.helpers.cli import invoke

COMMANDS = [["run"], ["report"], ["compare"], ["history"], ["baseline", "save"], ["models", "check"],
            ["models", "pull"], ["publish"]]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_option_metavars_are_words(command):
    out = invoke(*command, "--help", env={"COLUMNS": "120"})
    assert out.returncode == 0, out.stderr
    typed = re.findall(r"--[a-z-]+ <(?:path|str|float|int|integer|text)>", out.stdout)
    assert not typed, typed

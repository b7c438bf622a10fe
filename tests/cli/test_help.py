"""`--help` names what an option takes in words (DIR, METRIC), not Python types (<path>, <str>)."""

import re
import subprocess
import sys

import pytest

COMMANDS = [["run"], ["report"], ["compare"], ["history"], ["baseline", "save"], ["models", "check"],
            ["models", "pull"], ["publish"]]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_option_metavars_are_words(command):
    out = subprocess.run(
        [sys.executable, "-m", "specbench", *command, "--help"],
        capture_output=True, text=True, timeout=60, env={"COLUMNS": "120", "PATH": ""},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    typed = re.findall(r"--[a-z-]+ <(?:path|str|float|int|integer|text)>", out.stdout)
    assert not typed, typed

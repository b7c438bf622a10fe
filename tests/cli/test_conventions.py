"""Conventions every command shares: one exit code per kind of failure (``ExitCode``), click's
own usage errors said as specbench's ``error:`` line, and errors that name what the user typed."""

import pytest

from specbench.base.errors import ExitCode
from tests.helpers.cli import specbench
from tests.helpers.runs import make_run


@pytest.fixture
def damaged(tmp_path):
    run = make_run(tmp_path, "run1", [10.0, 10.0], {4: [15.0, 15.0]})
    text = (run / "manifest.json").read_text()
    (run / "manifest.json").write_text(text[: len(text) // 2])  # cut mid-write
    return run


@pytest.mark.parametrize(
    "args",
    [
        ("report", "{run}"),
        ("merge", "{run}", "--out", "{tmp}/merged"),
        ("run", "--resume", "{run}", "--dry-run"),
        ("compare", "{run}", "{run}"),
        ("history", "--add", "{run}", "--db", "{tmp}/h.sqlite"),
        ("baseline", "save", "{run}", "--name", "b"),
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_damaged_run_folder_is_bad_input_to_every_command(tmp_path, damaged, args):
    argv = [a.format(run=damaged, tmp=tmp_path) for a in args]
    r = specbench(*argv, cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == ExitCode.BAD_INPUT, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and "manifest.json" in lines[0], r.stderr


@pytest.mark.parametrize(
    "args, says",
    [
        (("run", "--no-such-option"), "specbench run: no such option: --no-such-option"),
        (("compare",), "specbench compare: missing argument"),
        (("report", "--format", "xml"), "specbench report: invalid value for '--format'"),
        (("publish", "--out", "site", "stray"), "specbench publish: got unexpected extra argument"),
    ],
)
def test_click_s_usage_errors_are_one_error_line_with_exit_2(tmp_path, args, says):
    r = specbench(*args, cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == ExitCode.BAD_INPUT
    assert lines == [lines[0]] and lines[0].startswith(f"error: {says}"), r.stderr
    assert lines[0].endswith("--help)") and "Usage:" not in r.stderr + r.stdout


def test_help_and_version_still_exit_0(tmp_path):
    assert specbench("--version", cwd=tmp_path).returncode == 0
    r = specbench("report", "--help", cwd=tmp_path)
    assert r.returncode == 0 and "Usage:" in r.stdout

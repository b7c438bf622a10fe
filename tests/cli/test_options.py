"""The options several commands share (specbench.cli.options), declared once, and the run session
(specbench.cli.session) that `run`, `ab`, `bisect` and `tune` go through."""

import pytest
import typer

from specbench.base.errors import SpecbenchError
from specbench.cli import app
from specbench.cli.reference import commands, context
from specbench.cli.session import RunSession
from specbench.execute.runner import RunInterrupted
from tests.helpers.cli import specbench

CMDS = dict(commands(app))


def _param(path: str, opt: str):
    return next(p for p in CMDS[path].params if opt in p.opts)


def test_set_is_one_declaration_with_one_help():
    found = {
        path: _param(path, "--set")
        for path, cmd in CMDS.items()
        if any("--set" in p.opts for p in cmd.params)
    }
    assert {"specbench run", "specbench plan", "specbench ab", "specbench bisect", "specbench tune"} <= set(
        found
    )
    records = {p.get_help_record(context(CMDS[path], path)) for path, p in found.items()}
    assert len(records) == 1, records  # the same name, metavar and help everywhere
    assert all(p.multiple for p in found.values())


@pytest.mark.parametrize("path", ["specbench ab", "specbench bisect", "specbench tune"])
@pytest.mark.parametrize(
    ("text", "seconds"), [("600", 600.0), ("600s", 600.0), ("10m", 600.0), ("1.5h", 5400.0), ("300.0", 300.0)]
)
def test_budget_takes_the_same_forms_everywhere(path, text, seconds):
    param = _param(path, "--budget")
    assert param.process_value(context(CMDS[path], path), text) == seconds


@pytest.mark.parametrize("path", ["specbench ab", "specbench bisect", "specbench tune"])
def test_a_bad_budget_is_refused_alike(path):
    param = _param(path, "--budget")
    for bad in ("ten", "0", "-5m"):
        with pytest.raises(SpecbenchError, match="--budget"):
            param.process_value(context(CMDS[path], path), bad)


def test_a_bad_budget_is_one_line_and_exit_2(tmp_path):
    r = specbench("tune", tmp_path / "c.yaml", "--budget", "ten", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: --budget 'ten'") and r.stderr.count("\n") == 1
    short = specbench("tune", tmp_path / "c.yaml", "--budget", "0.5", cwd=tmp_path)
    assert short.returncode == 2 and "at least 1 second" in short.stderr


def test_session_removes_the_folder_it_made_when_preparing_is_refused(tmp_path, monkeypatch):
    from specbench.execute import preparation

    run_dir = tmp_path / "new" / "run"
    session = RunSession(quiet=True, run_dir=run_dir)
    session.open_folder(resume=False)

    def refused(*args, **kwargs) -> None:
        raise SpecbenchError("refused before building")

    monkeypatch.setattr(preparation, "prepare", refused)
    with pytest.raises(SpecbenchError):
        session.prepare(None)
    assert not (tmp_path / "new").exists()


def test_session_keeps_a_folder_with_samples_and_says_so_on_interruption(tmp_path, capsys):
    run_dir = tmp_path / "run"
    session = RunSession(quiet=True, run_dir=run_dir)
    session.open_folder(resume=False)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "samples.jsonl").write_text("{}\n")
    with pytest.raises(typer.Exit) as exit_, session.measuring(lambda exc: f"stopped: {exc.kept}"):
        raise RunInterrupted(run_dir, 1, "SIGTERM", exit_code=143)
    assert exit_.value.exit_code == 143
    assert capsys.readouterr().err == "stopped: 1 sample\n"
    assert (run_dir / "samples.jsonl").is_file()

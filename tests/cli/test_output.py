"""The output layer (specbench.cli.output): one Format, one --format option on every command that
prints a table, one renderer per format, one writer of the GitHub job summary."""

import csv
import io
import json

import pytest

from specbench.cli import app
from specbench.cli.common import Col
from specbench.cli.output import Format, print_table, step_summary
from specbench.cli.reference import commands, context
from tests.helpers.cli import specbench
from tests.helpers.runs import BASE, SPEC, make_run

# The commands that print a result table: each takes --format.
TABLE_COMMANDS = {
    "specbench compare", "specbench ab", "specbench drafts", "specbench report", "specbench history",
    "specbench models list", "specbench plan", "specbench run", "specbench baseline list",
    "specbench configs list",
}  # fmt: skip
# The commands whose result is one record (a machine, a log's statistics): the table or JSON.
RECORD_COMMANDS = {"specbench env", "specbench parse", "specbench tune"}


def _format_params() -> dict[str, object]:
    return {path: p for path, cmd in commands(app) for p in cmd.params if "--format" in p.opts}


def test_every_table_command_takes_the_one_format_option():
    found = _format_params()
    assert TABLE_COMMANDS <= set(found)
    cmds = dict(commands(app))
    for path, param in found.items():
        names, _ = param.get_help_record(context(cmds[path], path))
        offered = names.split("<", 1)[1].rstrip(">").split("|")
        assert set(offered) <= {str(f) for f in Format} and offered[0] == "table", path
        assert param.default == Format.table, path


@pytest.mark.parametrize("path", sorted(TABLE_COMMANDS - {"specbench report"}))
def test_table_commands_offer_table_md_csv_and_json_with_one_help(path):
    cmds = dict(commands(app))
    names, text = _format_params()[path].get_help_record(context(cmds[path], path))
    assert names == "-f, --format <table|md|csv|json>" and text.startswith("table, md, csv or json.")


def test_every_format_option_is_format_or_f_and_record_commands_offer_table_and_json():
    found = _format_params()
    assert all(set(p.opts) == {"--format", "-f"} for p in found.values()), found
    cmds = dict(commands(app))
    for path in RECORD_COMMANDS:
        names, _ = found[path].get_help_record(context(cmds[path], path))
        assert names == "-f, --format <table|json>", path


def test_history_takes_f_as_report_does(tmp_path):
    r = specbench("history", "-f", "json", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


def test_a_format_a_command_does_not_write_is_one_line_and_exit_2(tmp_path):
    r = specbench("history", "--format", "html", cwd=tmp_path)
    assert r.returncode == 2 and "'html' is not one of 'table', 'md', 'csv', 'json'" in r.stderr
    assert "Traceback" not in r.stderr


ROWS = [["a|b", "1.50"], ["c", "2.00"]]
COLS = [Col("name"), Col("t/s", right=True)]


def test_one_renderer_per_format(capsys):
    print_table(COLS, ROWS, Format.md, title="speeds")
    assert (
        capsys.readouterr().out
        == "### speeds\n\n| name | t/s |\n|---|---:|\n| a\\|b | 1.50 |\n| c | 2.00 |\n"
    )
    print_table(COLS, ROWS, Format.json)
    assert json.loads(capsys.readouterr().out) == [
        {"name": "a|b", "t/s": "1.50"},
        {"name": "c", "t/s": "2.00"},
    ]
    print_table(COLS, ROWS, Format.csv)
    assert capsys.readouterr().out == "name,t/s\na|b,1.50\nc,2.00\n"


def test_step_summary_appends_only_where_the_job_has_one(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    step_summary("## mine")
    assert summary.read_text() == "earlier step\n## mine\n"
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    step_summary("## not written")  # no job summary: nothing to write, no error
    assert summary.read_text() == "earlier step\n## mine\n"


def test_history_in_every_format(tmp_path):
    run = make_run(tmp_path, "run1", BASE, SPEC, prompts=("p1", "p2"))
    table = specbench("history", "--add", run, cwd=tmp_path)
    assert table.returncode == 0 and "recorded" in table.stdout and "spec_tps over runs" in table.stdout
    data = specbench("history", "--format", "json", cwd=tmp_path)
    records = json.loads(data.stdout)  # stdout is the JSON alone
    assert records and all(r["cell"] and r["run"] == "run1" for r in records)
    assert list(records[0]) == ["cell", "started", "run", "llama.cpp", "threads", "value [95% CI]", "reps",
                                "prompts", "speed"]  # fmt: skip
    md = specbench("history", "--add", run, "--format", "md", cwd=tmp_path)
    assert md.stdout.startswith("### spec_tps over runs\n\n| cell | started | run |")
    assert "recorded" in md.stderr and "recorded" not in md.stdout
    empty = specbench(
        "history", "--metric", "speedup", "--cell", "nothing such", "--format", "json", cwd=tmp_path
    )
    assert json.loads(empty.stdout) == [] and "no speedup recorded" in empty.stderr


def test_models_list_json_is_an_alias_of_format_json(tmp_path):
    env = {"SPECBENCH_HOME": str(tmp_path / "home")}
    alias = specbench("models", "list", "--json", cwd=tmp_path, env=env)
    fmt = specbench("models", "list", "--format", "json", cwd=tmp_path, env=env)
    assert alias.returncode == fmt.returncode == 0 and alias.stdout == fmt.stdout
    assert json.loads(fmt.stdout) == []
    md = specbench("models", "list", "--format", "md", cwd=tmp_path, env=env)
    assert md.stdout.startswith("| kind | source | size |")


def test_compare_as_csv_rows_on_stdout_and_the_verdict_on_stderr(tmp_path):
    a = make_run(tmp_path, "run1", BASE, SPEC, prompts=("p1", "p2"))
    slow = make_run(tmp_path, "run3", BASE, {4: SPEC[4], 8: [x * 0.8 for x in SPEC[8]]}, prompts=("p1", "p2"))
    r = specbench("compare", a, slow, "--metric", "spec_tps", "--format", "csv", cwd=tmp_path)
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert r.returncode == 1 and rows and {row["metric"] for row in rows} == {"spec_tps"}
    assert {row["prompt"] for row in rows if row["status"] == "fail"} == {"p1", "p2"}
    assert r.stderr.strip().splitlines()[-1].startswith("FAIL: 2 regressions")


def test_tune_prints_json_with_the_one_format_option_too(tmp_path):
    """`tune --json` came before --format; both are taken, and --format offers what tune writes."""
    tune = "specbench tune"
    names, _ = _format_params()[tune].get_help_record(context(dict(commands(app))[tune], tune))
    assert names == "-f, --format <table|json>"
    r = specbench("tune", "config.yaml", "--format", "md", cwd=tmp_path)
    assert r.returncode == 2 and "'md' is not one of 'table', 'json'" in r.stderr


@pytest.mark.parametrize("fmt", [Format.json, Format.csv, Format.md])
def test_run_s_closing_table_in_another_format_is_the_report_s_alone_on_stdout(tmp_path, capsys, fmt):
    from types import SimpleNamespace

    from specbench.analysis.render import csv_text, json_text, markdown
    from specbench.analysis.report import build_report
    from specbench.cli.run import _print_summary
    from specbench.machine.noise import NoiseRecord

    run = make_run(tmp_path, "run1", BASE, SPEC)
    rep = build_report([run])
    summary = SimpleNamespace(run_dir=run, run_id="run1", n_failed=0, n_invalid=0, noise=NoiseRecord(),
                              sentinel=None)  # fmt: skip
    _print_summary(summary, rep, [], fmt)
    out, err = capsys.readouterr()
    assert out == {Format.json: json_text, Format.csv: csv_text, Format.md: markdown}[fmt](rep)
    assert f"results: {run}" in err

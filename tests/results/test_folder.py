"""The run folder's sample log under crashes: a torn last line must not poison later appends."""

import json
import shutil
from pathlib import Path

import pytest

from specbench import __version__
from specbench.base.errors import RunError
from specbench.results.manifest import FORMAT_VERSION
from specbench.results.manifestfile import load_manifest, read_run, save_manifest
from specbench.results.records import Sample
from specbench.results.samplelog import append_sample, load_samples

QUICK = Path(__file__).resolve().parents[1] / "data/runs/quick-cpu"


@pytest.fixture
def run_dir(tmp_path) -> Path:
    shutil.copytree(QUICK, tmp_path / "run")
    return tmp_path / "run"


def _tear_last_line(run_dir: Path) -> tuple[int, str]:
    """Cut the file mid-way through its last line, as a crash mid-write would."""
    path = run_dir / "samples.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    return len(lines) - 1, lines[-1]


def test_append_after_a_torn_line_keeps_every_sample_readable(run_dir):
    n_whole, torn = _tear_last_line(run_dir)
    warnings: list[str] = []
    assert len(load_samples(run_dir, warnings)) == n_whole
    assert len(warnings) == 1 and "incomplete last line" in warnings[0] and "--resume" in warnings[0]
    resumed = Sample.model_validate_json(torn)  # the torn sample, measured again on --resume
    append_sample(run_dir, resumed)
    again: list[str] = []
    samples = load_samples(run_dir, again)
    assert len(samples) == n_whole + 1 and samples[-1] == resumed and again == []
    assert (run_dir / "samples.jsonl").read_bytes().endswith(b"\n")


def test_torn_line_is_reported_by_report(run_dir):
    from specbench.analysis.report import build_report

    _tear_last_line(run_dir)
    rep = build_report([run_dir])
    assert any("incomplete last line" in n for n in rep.notes)
    assert read_run(run_dir, manifest_required=False).warnings


def test_a_bad_middle_line_names_the_field_and_the_reason(run_dir):
    path = run_dir / "samples.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    data = json.loads(lines[2])
    data["repetition"] = "three"
    lines[2] = json.dumps(data) + "\n"
    path.write_text("".join(lines))
    with pytest.raises(RunError, match=r"samples.jsonl:3: not a valid sample \(repetition: .*integer"):
        load_samples(run_dir)


def test_out_naming_an_existing_file_says_so(tmp_path):
    from specbench.results.folder import check_writable

    (tmp_path / "taken").write_text("x")
    with pytest.raises(RunError, match="is a file, not a folder"):
        check_writable(tmp_path / "taken")


# --- format version ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["quick-cpu", "ngl-sweep-cpu"])
def test_folders_from_before_format_versions_still_load(name):
    fixture = QUICK.parent / name
    assert "format_version" not in json.loads((fixture / "manifest.json").read_text())
    manifest = load_manifest(fixture)
    assert manifest.run_id == name and manifest.models  # the strict manifest, as --resume reads it
    assert read_run(fixture).samples


def test_a_saved_manifest_records_its_format(tmp_path):
    run = shutil.copytree(QUICK, tmp_path / "run")
    save_manifest(run, load_manifest(run))
    assert json.loads((run / "manifest.json").read_text())["format_version"] == FORMAT_VERSION


def _with_format(tmp_path, version) -> Path:
    run = shutil.copytree(QUICK, tmp_path / "run")
    data = json.loads((run / "manifest.json").read_text())
    data["format_version"] = version
    data["specbench_version"] = "9.0.0"
    (run / "manifest.json").write_text(json.dumps(data))
    return run


@pytest.mark.parametrize("read", [load_manifest, read_run], ids=["resume", "readers"])
def test_a_folder_from_a_newer_specbench_is_refused_naming_both_versions(tmp_path, read):
    run = _with_format(tmp_path, FORMAT_VERSION + 1)
    with pytest.raises(RunError) as exc:
        read(run)
    message = str(exc.value)
    assert "\n" not in message
    assert f"format {FORMAT_VERSION + 1} (written by specbench 9.0.0)" in message
    assert f"this specbench {__version__} reads formats up to {FORMAT_VERSION}" in message


def test_a_format_version_that_is_not_a_number_is_refused(tmp_path):
    with pytest.raises(RunError, match="format_version '2' is not a whole number"):
        read_run(_with_format(tmp_path, "2"))


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda d: {k: v for k, v in d.items() if k != "config"}, ["config: Field required"]),
        (
            lambda d: {**d, "runner": 5, "plan_size": "many"},
            ["plan_size: Input should be a valid integer", "and 1 more"],
        ),
        (lambda d: None, ["not valid JSON"]),
    ],
)
def test_a_damaged_manifest_names_the_field_and_why(tmp_path, damage, words):
    """--resume reads the manifest strictly: the message names the field and the reason, whole."""
    from specbench.results.manifestfile import load_manifest

    text = (QUICK / "manifest.json").read_text()
    data = damage(json.loads(text))
    (tmp_path / "manifest.json").write_text(text[:200] if data is None else json.dumps(data))  # None: cut
    with pytest.raises(RunError) as exc:
        load_manifest(tmp_path)
    message = str(exc.value)
    assert "validation error for" not in message and "\n" not in message
    for word in words:
        assert word in message, message

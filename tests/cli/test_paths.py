"""Every command that takes a path or a name answers a bad one in one line, never a traceback:
a name over 255 bytes, a folder that does not exist or cannot be written, an image format that
cannot be drawn."""

import json

import pytest

from specbench.results.runlock import RunLock
from tests.helpers.cli import specbench
from tests.helpers.runs import BASE, SPEC, make_run

LONG = "n" * 300  # over any filesystem's 255-byte name limit


def one_line_error(proc, *words: str) -> str:
    err = proc.stderr.strip()
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("error: "), err
    for word in words:
        assert word in err, err
    return err


@pytest.fixture
def run(tmp_path):
    return make_run(tmp_path, "run1", BASE, SPEC)


@pytest.mark.parametrize(
    "args",
    [
        ["report", "run1", "--out", LONG],
        ["report", f"run1/{LONG}"],
        ["compare", "run1", LONG],
        ["compare", f"{LONG}/x", "run1"],
        ["baseline", "save", "run1", "--name", LONG],
        ["baseline", "save", "run1", "--name", "ok", "--dir", f"d/{LONG}"],
        ["history", "--db", f"{LONG}.sqlite"],
        ["history", "--plot", f"{LONG}.png"],
        ["history", "--add", f"run1/{LONG}"],
        ["parse", LONG],
        ["run", f"{LONG}.yaml"],
        ["run", "--resume", f"results/{LONG}"],
        ["run", "configs/ci.yaml", "--out", f"results/{LONG}"],
        ["tune", "configs/ci.yaml", "--out", LONG],
    ],
)
def test_a_name_too_long_is_one_line(tmp_path, run, args):
    (tmp_path / "configs").mkdir(exist_ok=True)
    (tmp_path / "configs" / "ci.yaml").write_text("name: x\n")  # refused (no models) only after the path
    err = one_line_error(specbench(*args, cwd=tmp_path), "at most")
    assert LONG not in err  # the 300 characters are shortened, the message stays readable


def test_a_config_name_too_long_for_a_run_folder(tmp_path):
    """The default run folder is named after the config: refused before building anything."""
    from tests.helpers.configs import GOOD  # a config that loads (placeholder model files)

    (tmp_path / "sub").mkdir()
    (tmp_path / "big.gguf").write_bytes(b"GGUF")
    (tmp_path / "sub" / "small.gguf").write_bytes(b"GGUF")
    (tmp_path / "c.yaml").write_text(GOOD.replace("name: t", f"name: {LONG[:250]}", 1))  # a name, too long
    one_line_error(specbench("run", "c.yaml", cwd=tmp_path), "255 bytes", "--out DIR")  # with the date
    one_line_error(specbench("run", "c.yaml", "--dry-run", cwd=tmp_path), "255 bytes", "--out DIR")
    (tmp_path / "c.yaml").write_text(GOOD.replace("name: t", f"name: {LONG}", 1))  # no file's name
    one_line_error(specbench("run", "c.yaml", "--dry-run", cwd=tmp_path), "c.yaml: name:", "over 255")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    "args, words",
    [
        (["history", "--db", "run1/samples.jsonl/h.sqlite", "--add", "run1"], ["is a file, not a folder"]),
        (["history", "--plot", "h.bmp"], [".bmp", ".png"]),
        (["history", "--plot", "h.PPM"], [".ppm", ".svg"]),
        (["history", "--plot", "run1"], ["--plot run1 is a folder"]),  # was drawn beside it, as run1.png
        (["history", "--plot", "."], ["is a folder"]),
        (["report", "run1", "--out", "/proc/none/here"], ["/proc/none/here", "does not exist"]),
        (["baseline", "save", "run1", "--name", "b", "--dir", "/proc/none"], ["/proc/none"]),
        (["baseline", "save", "run1", "--name", "a/b"], ["--name"]),
    ],
)
def test_absent_or_unwritable_places_and_formats(tmp_path, run, args, words):
    one_line_error(specbench(*args, cwd=tmp_path), *words)


def test_plot_without_extension_names_the_file_it_writes(tmp_path, run):
    proc = specbench("history", "--add", "run1", "--plot", "noext", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "plot: noext.png" in proc.stdout
    assert (tmp_path / "noext.png").read_bytes()[:4] == b"\x89PNG" and not (tmp_path / "noext").exists()
    proc = specbench("history", "--plot", "sub/h.svg", cwd=tmp_path)
    assert "plot: sub/h.svg" in proc.stdout and (tmp_path / "sub" / "h.svg").read_text().startswith("<?xml")


def test_commands_on_a_run_still_going_say_so(tmp_path, run):
    """The lock, not the manifest, tells that a run is going: no advice to --resume it (the lock
    would refuse that), and a run whose process died (manifest `running`, no lock) is interrupted."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "samples.jsonl").write_text("")
    data = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**data, "status": "running"}))
    with RunLock(run), RunLock(empty):
        for args in (["baseline", "save", "run1", "--name", "b"], ["report", "empty"]):
            err = one_line_error(specbench(*args, cwd=tmp_path), "still running", ".lock")
            assert "--resume" not in err
        proc = specbench("history", "--add", "run1", cwd=tmp_path)
        assert "still running" in proc.stderr and "--resume" not in proc.stderr
        proc = specbench("report", "run1", cwd=tmp_path)
        assert proc.returncode == 0 and "INCOMPLETE: running" in proc.stdout
        assert "still running" in proc.stdout
        proc = specbench("compare", "run1", "run1", cwd=tmp_path)  # compared as far as it got, and said
        assert "note: run1 is partial: it is still running" in " ".join(proc.stderr.split())
    # the lock is free, the manifest still says running: its process died
    err = one_line_error(specbench("baseline", "save", "run1", "--name", "b", cwd=tmp_path), "interrupted")
    assert "--resume" in err


def test_a_run_stopped_before_its_first_sample_is_a_run_with_nothing_yet(tmp_path, run):
    """A manifest and no samples.jsonl (stopped, or still warming up): every reader knows it as a
    run that recorded nothing, not as "not a run folder"."""
    early = tmp_path / "early"
    early.mkdir()
    data = json.loads((run / "manifest.json").read_text())
    (early / "manifest.json").write_text(json.dumps({**data, "status": "interrupted"}))
    err = one_line_error(specbench("report", "early", cwd=tmp_path), "recorded no sample yet", "--resume")
    assert "not a run folder" not in err
    proc = specbench("compare", "run1", "early", cwd=tmp_path)
    assert proc.returncode == 4 and "NOTHING TO COMPARE" in proc.stdout, proc.stdout + proc.stderr
    proc = specbench("history", "--add", "early", cwd=tmp_path)
    assert proc.returncode == 0 and "nothing recorded from early" in proc.stderr
    one_line_error(specbench("baseline", "save", "early", "--name", "e", cwd=tmp_path), "not complete")
    (tmp_path / "afile").write_text("x")
    one_line_error(specbench("report", "afile", cwd=tmp_path), "is a file, not a run folder")
    with RunLock(early):
        (early / "manifest.json").write_text(json.dumps({**data, "status": "running"}))
        one_line_error(specbench("report", "early", cwd=tmp_path), "still running")


def test_history_db_and_plot_places_are_checked_before_any_work_and_viewing_writes_nothing(tmp_path, run):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    (tmp_path / "emptyf").write_text("")
    for args, words in [
        (["--db", "adir", "--add", "run1"], ["adir is a folder"]),
        (["--db", "adir"], ["adir is a folder"]),
        (["--db", "afile/h.sqlite", "--add", "run1"], ["afile is a file, not a folder"]),
        (["--db", "emptyf"], ["not a specbench history database"]),
        (["--plot", "afile/h.png"], ["afile is a file, not a folder"]),  # an empty history too
        (["--add", "run1", "--db", "h.sqlite", "--plot", "afile/x/h.png"], ["afile is a file"]),
    ]:
        proc = specbench("history", *args, cwd=tmp_path)
        one_line_error(proc, *words)
        assert "recorded" not in proc.stdout  # refused before the run was recorded or the table drawn
    assert (tmp_path / "emptyf").read_bytes() == b"" and not (tmp_path / "h.sqlite").exists()


# issue 58: a shared config's value that would lead outside its folder; the dry run and plan refuse
# it as the run does, naming the key and the value (the whole list of fields: tests/plan/test_config_paths.py)
TRAVERSALS = [
    ("models.small={pypi: {package: tiny==1.0, member: tiny/m.gguf, filename: /home/me/notes.txt}}",
     "models.small.pypi.filename: '/home/me/notes.txt'"),
    ("models.small={pypi: {package: tiny==1.0, member: tiny/m.gguf, filename: ../../../../x.gguf}}",
     "models.small.pypi.filename: '../../../../x.gguf'"),
    ("models.small={hf: {repo: a/b, file: ../../../../etc/passwd}}",
     "models.small.hf.file: '../../../../etc/passwd'"),
    ("models.small={hf: {repo: a/b, file: m.gguf, revision: ../../etc}}",
     "models.small.hf.revision: '../../etc'"),
    ("models.small={hf: {repo: ../../../etc, file: m.gguf}}", "models.small.hf.repo: '../../../etc'"),
    ("name=../../x", "name: '../../x'"),
]  # fmt: skip


@pytest.mark.parametrize("command", [["run", "--dry-run"], ["plan"], ["run"], ["models", "pull"]])
@pytest.mark.parametrize(("override", "words"), TRAVERSALS, ids=[w for _, w in TRAVERSALS])
def test_a_value_that_leaves_its_folder_is_refused_before_anything(tmp_path, command, override, words):
    from tests.helpers.configs import GOOD

    (tmp_path / "sub").mkdir()
    (tmp_path / "big.gguf").write_bytes(b"GGUF")
    (tmp_path / "sub" / "small.gguf").write_bytes(b"GGUF")
    key, _, value = override.partition("=")
    if key == "name":
        text = GOOD.replace("name: t", f"name: {value}")
    else:  # the model `small` written with the value, in the file (a shared config)
        text = GOOD.replace("  small: {path: sub/small.gguf}", f"  small: {value}")
    (tmp_path / "c.yaml").write_text(text)
    before = sorted(p for p in tmp_path.rglob("*"))
    err = one_line_error(
        specbench(*command, "c.yaml", cwd=tmp_path, env={"SPECBENCH_HOME": str(tmp_path / "h")})
    )
    assert f"c.yaml: {words}" in err, err
    assert sorted(p for p in tmp_path.rglob("*")) == before  # nothing made, in the cache or beside it


def test_a_baseline_name_that_leaves_its_folder_is_refused(tmp_path, run):
    for name in ("../../x", "/tmp/x", "..", "a\x00b"):
        one_line_error(specbench("baseline", "save", "run1", "--name", name, cwd=tmp_path), "--name")
    assert not (tmp_path / "results").exists()

"""However a run ends (a full disk, an unexpected exception), its manifest says how and why, the
lock file goes, the finished samples stay and ``--resume`` completes it. The runner is the real
one; only the llama.cpp binaries are stand-ins (tests/fakebins)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import pytest

import specbench.execute.runner as runner_module
import specbench.results.folder as results_folder
from specbench.base.errors import RunError
from specbench.builder.toolkit import detect_backend
from specbench.execute.runner import execute
from specbench.machine.envinfo import collect
from specbench.results.folder import LOCK
from specbench.results.manifestfile import load_manifest
from specbench.results.runlock import RESERVE, RunLock, lock_holder
from specbench.results.samplelog import load_samples
from tests.helpers.fakeruns import inv, manifest, process

PLAN = [inv("nodraft", prompt_id=f"p{i:02d}") for i in range(8)]
KEPT = 3  # samples written before the run is made to end


@pytest.fixture(scope="module")
def machine():
    return collect(detect_backend)


def _status(run_dir: Path) -> tuple[str | None, str | None]:
    data = json.loads((run_dir / "manifest.json").read_text())
    return data["status"], data["status_reason"]


def _resume_completes(run_dir: Path) -> None:
    execute(process(PLAN), run_dir, load_manifest(run_dir), resume=True)
    assert [s.prompt_id for s in load_samples(run_dir)] == [f"p{i:02d}" for i in range(len(PLAN))]
    assert _status(run_dir) == ("complete", None)
    assert not (run_dir / LOCK).exists()


def _fill(path: Path) -> None:
    """Write to ``path`` until the disk it is on has no byte left."""
    with open(path, "wb", buffering=0) as fh:
        chunk = b"x" * 4096
        try:
            while True:
                fh.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        try:
            while True:
                fh.write(b"x")
        except OSError:
            pass


def test_a_really_full_disk_is_recorded_and_the_lock_goes(tmp_path, machine):
    """A tmpfs filled by another writer after three samples: the next sample's files cannot be
    written (its raw stdout stamps), and the manifest is written with the space the lock reserved for it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root); the injected ENOSPC below covers the runner")
    try:
        run_dir, filler = disk / "run", disk / "filler"

        def observe(phase: str, n: int) -> None:
            if n == KEPT and not filler.exists():
                assert (run_dir / LOCK).stat().st_size > RESERVE // 2  # the reserve is held
                _fill(filler)

        with pytest.raises(RunError, match="No space left on device") as exc:
            execute(process(PLAN), run_dir, manifest(run_dir, machine), observe=observe)
        assert "--resume" in str(exc.value)
        status, reason = _status(run_dir)
        assert status == "failed" and "No space left on device" in reason and "cannot write" in reason
        assert not (run_dir / LOCK).exists() and lock_holder(run_dir) is None
        assert len(load_samples(run_dir)) == KEPT
        filler.unlink()
        _resume_completes(run_dir)
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_an_injected_enospc_is_recorded_with_the_reserved_space(tmp_path, machine, monkeypatch):
    """ENOSPC injected into the sample log's append, and every manifest write refused while the
    lock still holds its reserve (the only free space left): the run frees it and records its end."""
    run_dir = tmp_path / "run"
    real_append, real_write = runner_module.append_sample, results_folder.write_atomic
    full = {"now": False}

    def append(run_dir_: Path, sample) -> None:
        full["now"] = full["now"] or len(load_samples(run_dir_)) == KEPT
        if full["now"]:
            raise RunError(f"cannot write {run_dir_ / 'samples.jsonl'}: No space left on device; earlier "
                           f"samples are intact, then `specbench run --resume {run_dir_}`")  # fmt: skip
        real_append(run_dir_, sample)

    def write(path: Path, data) -> None:
        if full["now"] and (run_dir / LOCK).stat().st_size > 64:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_write(path, data)

    monkeypatch.setattr(runner_module, "append_sample", append)
    monkeypatch.setattr(results_folder, "write_atomic", write)
    with pytest.raises(RunError, match="No space left on device"):
        execute(process(PLAN), run_dir, manifest(run_dir, machine))
    status, reason = _status(run_dir)
    assert status == "failed" and "No space left on device" in reason
    assert not (run_dir / LOCK).exists() and len(load_samples(run_dir)) == KEPT
    monkeypatch.undo()
    _resume_completes(run_dir)


def test_any_exception_that_ends_a_run_is_recorded(tmp_path, machine):
    """Not a specbench error at all (a bug, an OSError from a library): recorded with its type."""
    run_dir = tmp_path / "run"

    def observe(phase: str, n: int) -> None:
        if n == KEPT:
            raise OSError(errno.EIO, "Input/output error")

    with pytest.raises(OSError):
        execute(process(PLAN), run_dir, manifest(run_dir, machine), observe=observe)
    assert _status(run_dir) == ("failed", "OSError: [Errno 5] Input/output error")
    assert not (run_dir / LOCK).exists() and len(load_samples(run_dir)) == KEPT
    _resume_completes(run_dir)


def test_a_failure_while_the_run_sets_up_its_folder_is_recorded_too(tmp_path, machine, monkeypatch):
    """Between "running" and the first sample (raw/ made, orphan logs marked on a resume) the run can
    end too, on a full disk say: the manifest says so, it is never left "running"."""
    run_dir = tmp_path / "run"

    def no_space(folder: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runner_module, "prepare_raw", no_space)
    with pytest.raises(OSError):
        execute(process(PLAN), run_dir, manifest(run_dir, machine))
    status, reason = _status(run_dir)
    assert status == "failed" and "No space left on device" in reason
    assert not (run_dir / LOCK).exists()
    monkeypatch.undo()
    _resume_completes(run_dir)


def test_the_lock_file_goes_with_the_lock_and_a_second_run_locks_a_fresh_one(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with RunLock(run_dir) as lock:
        assert lock_holder(run_dir) == os.getpid()
        with pytest.raises(RunError, match="another specbench run"):
            RunLock(run_dir).acquire()
        assert lock.free_reserve() and not lock.free_reserve()  # freed once, then nothing left
    assert not (run_dir / LOCK).exists() and lock_holder(run_dir) is None
    with RunLock(run_dir):
        assert (run_dir / LOCK).exists()
    assert not (run_dir / LOCK).exists()

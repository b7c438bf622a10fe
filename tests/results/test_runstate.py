"""What a run folder allows, and what to do about an unfinished one: the lock, not the manifest,
tells a run still going from one whose process died (kill -9 leaves the manifest `running`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from specbench.base.errors import RunError
from specbench.results.runlock import RunLock
from specbench.results.runstate import check_fresh, finish_hint

QUICK = Path(__file__).resolve().parents[1] / "data/runs/quick-cpu"


def test_a_run_still_going_is_waited_for_and_one_whose_process_died_is_resumed(tmp_path):
    run = shutil.copytree(QUICK, tmp_path / "run")
    with RunLock(run):
        hint = finish_hint(run, "running")
        assert (
            hint
            == f"it is still running (process {os.getpid()} holds {run / '.lock'}); wait for it to finish"
        )
        with pytest.raises(RunError) as exc:
            check_fresh(run)
        assert "--resume" not in str(exc.value) and "wait for it to finish or choose another --out" in str(
            exc.value
        )
    assert finish_hint(run, "running") == f"`specbench run --resume {run}` finishes it"  # killed: no lock


def test_every_printed_resume_command_can_be_pasted_back_for_a_folder_with_a_space(tmp_path):
    """The library's hints quote the folder as the CLI's closing line does: `specbench run --resume
    my runs/r1` would resume a folder named `my`."""
    import shlex

    from specbench.results.folder import write_raw

    run = shutil.copytree(QUICK, tmp_path / "my runs" / "r1")
    command = f"specbench run --resume {shlex.quote(str(run))}"
    assert finish_hint(run, None) == f"`{command}` finishes it"
    (run / "raw").write_text("a file where the raw folder goes")
    with pytest.raises(RunError) as exc:
        write_raw(run / "raw" / "s1.stdout", "text")
    assert str(exc.value).endswith(f"`{command}`")

"""run_together against stand-in executables for the operating-system faults (tests/fakebins)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specbench.base import interrupts
from specbench.base.childenv import child_env
from specbench.base.errors import RunError
from specbench.execute.process import Command, run_together
from tests.helpers.procs import alive, run_one

FAKEBINS = Path(__file__).parents[1] / "fakebins"


def _pids(stdout: Path) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in stdout.read_text().splitlines())}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("stubborn", [False, True], ids=["sigterm", "sigkill"])
@pytest.mark.parametrize("stamp", [False, True], ids=["file", "stamped-pipe"])
def test_timeout_kills_the_whole_process_group(tmp_path, monkeypatch, stubborn, stamp):
    """Also when stdout is a time-stamped pipe, which the helper left behind holds open."""
    if stubborn:
        monkeypatch.setenv("FAKEBIN_STUBBORN", "1")  # ignores SIGTERM: only SIGKILL ends it
    t0 = time.monotonic()
    res = run_one([str(FAKEBINS / "sleeper")], tmp_path / "o", tmp_path / "e", timeout_s=1.0, grace_s=0.5,
                      stamp_stdout=stamp)  # fmt: skip
    if stamp:  # both lines came through the pipe, stamped with the bytes read so far
        assert res.stdout_times and res.stdout_times[-1][1] == res.stdout_path.stat().st_size
        assert all(0 <= t < 1.5 for t, _ in res.stdout_times)
    elapsed = time.monotonic() - t0
    assert res.timed_out and res.exit_code is None
    assert res.exit_code is None
    assert 1.0 <= res.wall_s < 5 and elapsed < 5
    pids = _pids(res.stdout_path)
    assert set(pids) == {"self", "child"}
    deadline = time.monotonic() + 2
    while any(alive(p) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.05)  # the child is reparented to init, which reaps it asynchronously
    assert not any(alive(p) for p in pids.values()), "a process of the group survived the timeout"


def test_segfault_is_reported_by_signal_name(tmp_path):
    res = run_one([str(FAKEBINS / "segfault")], tmp_path / "o", tmp_path / "e", timeout_s=10)
    assert not res.timed_out
    assert res.exit_code is None and res.signal == "SIGSEGV"
    assert "loading model" in res.stderr_path.read_text()


def test_exit_code_and_separate_streams(tmp_path):
    res = run_one([str(FAKEBINS / "exit1")], tmp_path / "o", tmp_path / "e", timeout_s=10)
    assert res.exit_code == 1 and res.signal is None and not res.timed_out
    assert res.stdout_path.read_text() == ""
    assert "failed to load model" in res.stderr_path.read_text()


def test_stdin_is_closed_locale_is_c_and_secrets_are_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value_123")
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", "hf_secret_value_456")
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    script = (
        "import os,sys; print(repr(sys.stdin.read())); "
        "print(os.environ.get('LC_ALL')); print(sorted(os.environ))"
    )
    res = run_one([sys.executable, "-c", script], tmp_path / "o", tmp_path / "e", timeout_s=30)
    assert res.exit_code == 0, res.stderr_path.read_text()
    out = res.stdout_path.read_text().splitlines()
    assert out[0] == "''"  # /dev/null, not the terminal: a chat-mode binary cannot wait on it
    assert out[1] == "C"
    assert "HF_TOKEN" not in out[2] and "HUGGING_FACE_HUB_TOKEN" not in out[2]
    assert "hf_secret_value" not in res.stdout_path.read_text()
    env = child_env(
        {"HF_TOKEN": "x", "GITHUB_TOKEN": "y", "OPENAI_API_KEY": "z", "PATH": "/bin", "HOME": "/h"}
    )
    assert env == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C"}


def test_runs_in_its_own_session(tmp_path):
    res = run_one([sys.executable, "-c", "import os; print(os.getsid(0), os.getpgrp())"],
                      tmp_path / "o", tmp_path / "e", timeout_s=30)  # fmt: skip
    sid, pgrp = map(int, res.stdout_path.read_text().split())
    assert sid != os.getsid(0) and pgrp != os.getpgrp()


def test_missing_binary_is_a_one_line_error(tmp_path):
    with pytest.raises(RunError, match="cannot start .*no-such-binary") as exc:
        run_one([str(tmp_path / "no-such-binary")], tmp_path / "o", tmp_path / "e", timeout_s=5)
    assert "\n" not in str(exc.value)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("when", [0, 1], ids=["first-start", "second-start"])
def test_a_signal_while_a_child_starts_kills_every_child_started(tmp_path, monkeypatch, when):
    """The handler defers a signal that lands inside Popen until the child is known (the failure of
    CI run 51: raised before the new child joined the list that is killed, it outlived the run)."""
    real_popen, starts = subprocess.Popen, []

    def popen_then_signal(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        starts.append(proc.pid)
        if len(starts) == when + 1:
            interrupts.deliver(KeyboardInterrupt())  # what the SIGINT handler does mid-Popen
        return proc

    monkeypatch.setattr(subprocess, "Popen", popen_then_signal)
    commands = [Command(["sleep", "30"], tmp_path / f"o{i}", tmp_path / f"e{i}", 60) for i in range(2)]
    with pytest.raises(KeyboardInterrupt):
        run_together(commands, grace_s=0.5)
    assert len(starts) == when + 1  # the signal stops the pair before its next start
    assert not [pid for pid in starts if alive(pid)], "a child outlived the interrupted start"


def test_an_argument_with_a_nul_is_one_line_not_a_traceback(tmp_path):
    """The config and prompt loaders refuse a NUL; should one reach a command line all the same,
    Popen's ValueError is a RunError naming the binary."""
    with pytest.raises(RunError, match=r"cannot start .*plain: embedded null byte in its command line"):
        run_one([str(FAKEBINS / "plain"), "-p", "a\x00b"], tmp_path / "o", tmp_path / "e", timeout_s=10)


def test_a_child_writes_its_files_in_its_logs_folder_not_the_users(tmp_path, monkeypatch):
    """llama.cpp programs of 2023-24 write main.log into their working folder: a run must leave the
    user's folder as it was and keep the file beside the sample's raw logs."""
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.chdir(user)
    raw = tmp_path / "run" / "raw"
    code = "open('main.log', 'w').write('log')"
    (res,) = run_together([Command([sys.executable, "-c", code], raw / "o.out", raw / "o.err", 30)])
    assert res.exit_code == 0
    assert list(user.iterdir()) == [] and (raw / "main.log").read_text() == "log"

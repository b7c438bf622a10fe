"""SIGTERM and SIGHUP end every command as Ctrl-C does (specbench.base.interrupts), with real signals.

`specbench build` is interrupted while compiling (a stand-in tree whose build step sleeps); `run`
and `tune` have their own tests (tests/cli/test_run_faults.py, tests/cli/test_tune_signals.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import pytest

from tests.fixtures.build import fake_llama_tree
from tests.helpers.procs import processes_with, wait_for


def test_a_signal_while_a_child_starts_is_raised_right_after_it_started():
    """The handler defers its exception while Popen runs (raised inside it, it would orphan the child)."""
    code = """
import os, signal
from specbench.base import interrupts
from specbench.base.errors import Terminated
interrupts.install()
interrupts.child_starting()
os.kill(os.getpid(), signal.SIGTERM)  # handled at once: deferred, nothing raised here
print("deferred", flush=True)
try:
    interrupts.child_started()
except Terminated as exc:
    print("raised", exc.signal_name, exc.exit_code, flush=True)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["deferred", "raised SIGTERM 143"]


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the build's children in /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_build_killed_by_a_signal_kills_its_compile_step_and_says_what_was_kept(tmp_path, sig):
    marker = f"specbench-build-{uuid.uuid4().hex[:12]}"
    tree = fake_llama_tree(tmp_path / "tree")
    (tree / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.14)\nproject(llama CXX)\n"
        f'add_custom_command(OUTPUT slow.cpp COMMAND bash -c "exec -a {marker} sleep 300" '
        "COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/main.cpp slow.cpp)\n"
        "add_executable(llama-completion slow.cpp)\n"
    )
    env = {**os.environ, "SPECBENCH_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "specbench", "build", "--backend", "cpu", "--source", str(tree)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    try:
        assert wait_for(lambda: processes_with(marker) or proc.poll() is not None, 240), "never compiled"
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("interrupted")]
    assert len(lines) == 1 and lines[0].startswith(f"interrupted ({sig.name}): nothing cached"), err
    assert "next `specbench build` goes on from the objects compiled in" in lines[0]
    assert wait_for(lambda: not processes_with(marker), 10), "the build step outlived specbench"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_models_pull_killed_by_a_signal_keeps_the_bytes_and_the_next_pull_resumes(tmp_path, sig):
    from tests.hub_server import FakeHub
    from tests.models.tiny_gguf import write_tiny_gguf

    big = write_tiny_gguf(tmp_path / "src" / "big.gguf", n_tensors=1, tensor_shape=(1024, 512))
    hub = FakeHub(tmp_path / "hub").start()
    try:
        hub.add_commit("org/big", {"big.gguf": big})
        hub.stall["org/big/big.gguf"] = 100_000
        (tmp_path / "cfg.yaml").write_text(
            "models:\n  big: {hf: {repo: org/big, file: big.gguf}}\n"
            "pairs:\n  p: {target: big, method: ngram-simple}\n"
        )
        env = {**os.environ, "SPECBENCH_HOME": str(tmp_path / "home"), "HF_ENDPOINT": hub.url,
               "HF_HOME": str(tmp_path / "hf")}  # fmt: skip
        for var in ("HF_HUB_CACHE", "HF_TOKEN", "HF_HUB_OFFLINE"):
            env.pop(var, None)
        cmd = [sys.executable, "-m", "specbench", "models", "pull", "cfg.yaml"]
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True, env=env)  # fmt: skip
        try:
            parts = lambda: [p for p in tmp_path.rglob("*.part") if p.stat().st_size > 0]  # noqa: E731
            assert wait_for(lambda: parts() or proc.poll() is not None, 120), "never started the transfer"
            assert proc.poll() is None, proc.communicate()[1]
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 128 + sig, err
        assert "Traceback" not in err
        [line] = [ln for ln in err.splitlines() if ln.startswith("interrupted")]
        head = f"interrupted ({sig.name}): "
        assert line.startswith(head) and " bytes of org/big/big.gguf kept in " in line, err
        assert line.endswith("run the command again to resume")
        kept = int(line.removeprefix(head).split()[0])  # what had arrived when the signal came
        assert 0 < kept <= 100_000 and [p.stat().st_size for p in parts()] == [kept]
        del hub.stall["org/big/big.gguf"]
        hub.requests.clear()
        again = subprocess.run(
            cmd, cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, timeout=120
        )
        assert again.returncode == 0, again.stderr
        gets = [r for r in hub.requests if r.method == "GET" and "/resolve/" in r.path]
        assert [r.range for r in gets] == [f"bytes={kept}-"]  # the kept bytes were not fetched again
    finally:
        hub.stop()

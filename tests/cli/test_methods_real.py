"""EAGLE-3 and MTP through the real pinned llama.cpp, with GGUFs written at test time (no download).

`smol_eagle3` is a random-weight EAGLE-3 head for SmolLM2; `tiny_mtp` a random-weight glm4moe
target with one MTP layer (tests/fixtures/generated.py). Their acceptance means nothing: these
tests check the plumbing (the files load, drafting happens, the logs parse).
"""

from __future__ import annotations

import subprocess

import pytest

from specbench.childenv import child_env
from specbench.models.meta import read_metadata
from specbench.parse import parse_text

pytestmark = pytest.mark.slow
PROMPT = "Write a Python function that returns the sum of a list of numbers."


def test_generated_files_are_what_the_methods_need(smol_eagle3, tiny_mtp):
    head = read_metadata(smol_eagle3)
    assert head.architecture == "eagle3" and head.vocab_size == 49152
    assert smol_eagle3.stat().st_size < 16_000_000
    assert read_metadata(tiny_mtp).architecture == "glm4moe"


def _speculative_simple(llama_build, *args: str) -> subprocess.CompletedProcess[str]:
    binary = llama_build.binary("speculative_simple").path
    cmd = [binary, *args, "--spec-draft-n-max", "4", "-p", PROMPT, "-n", "16", "-t", "2", "--temp", "0"]
    return subprocess.run(
        [*cmd, "-c", "512"],
        capture_output=True,
        text=True,
        timeout=300,
        env=child_env(),
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("method", ["draft-eagle3", "draft-mtp"])
def test_pinned_build_drafts_with_the_generated_files(method, llama_build, smol_f32, smol_eagle3, tiny_mtp):
    """By hand, no specbench plan: llama-speculative-simple loads the file and drafts with it."""
    if method == "draft-eagle3":
        args = ["-m", str(smol_f32.path), "-md", str(smol_eagle3), "--spec-type", method]
    else:
        args = ["-m", str(tiny_mtp), "--spec-type", method]
    result = _speculative_simple(llama_build, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    parsed = parse_text(result.stderr + result.stdout)
    assert parsed.kind == "speculative" and parsed.n_drafted and parsed.n_drafted > 0
    assert parsed.decoded and parsed.decoded.tokens and parsed.decoded.tokens >= 16
    if method == "draft-mtp":  # its MTP layer repeats the target's last prediction (see the fixture)
        assert parsed.n_accept and parsed.n_accept > 0

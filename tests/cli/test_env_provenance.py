"""The environment that changes llama.cpp is provenance (issue 31): `LLAMA_ARG_*` and the like, as
the binaries see them, go into the manifest's env, `run` names them, `compare` warns when the two
sides differ in them; secrets are never recorded. Real runs of the 135M model, 16 tokens."""

from __future__ import annotations

import pytest

from specbench.results.manifestfile import load_manifest
from tests.fixtures.build import cli_process as cli
from tests.helpers.realruns import ngram_config

# the integration tier (make test-integration): each rule here is also proven over replayed runs in
# tests/execute/test_runner_replay.py (docs/development.md, "Tests and linters")
pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_llama_arg_variables_are_recorded_named_and_compared(tmp_path, llama_build, smol_q4):
    config, _ = ngram_config(tmp_path, smol_q4)
    sets = ["--set", "repetitions=2", "--set", "warmup=0", "--set", "generation.n_predict=16"]
    with_fa, without = tmp_path / "with-fa", tmp_path / "without"
    env = {"LLAMA_ARG_FLASH_ATTN": "on", "LLAMA_ARG_API_KEY": "sekrit-123", "HF_TOKEN": "hf_sekrit"}
    first = cli("run", str(config), "--out", str(with_fa), *sets, env={**env, "COLUMNS": "200"})
    assert first.returncode == 0, first.stderr[-2000:]
    assert "environment: LLAMA_ARG_FLASH_ATTN=on reach every llama.cpp binary" in first.stderr
    speed = load_manifest(with_fa).noise.speed  # the config says `sentinel: false`: no reading, and said
    assert speed.off and not speed.readings and "speed sentinel off (sentinel: false)" in first.stderr
    variables = load_manifest(with_fa).env.variables
    assert variables.get("LLAMA_ARG_FLASH_ATTN") == "on"
    text = (with_fa / "manifest.json").read_text()
    assert "sekrit" not in text and "LLAMA_ARG_API_KEY" not in text  # secrets are never recorded
    second = cli("run", str(config), "--out", str(without), *sets, env={"COLUMNS": "200"})
    assert second.returncode == 0, second.stderr[-2000:]
    assert "LLAMA_ARG_FLASH_ATTN" not in load_manifest(without).env.variables
    compared = cli("compare", str(without), str(with_fa), env={"COLUMNS": "200"})
    assert "Traceback" not in compared.stderr
    out = compared.stdout + compared.stderr
    assert "WARNING: environment LLAMA_ARG_FLASH_ATTN: unset -> on" in out, out[-3000:]

"""`specbench run --dry-run` with a Hugging Face model already in the cache: found without one
request to the Hub (up, down, or HF_HUB_OFFLINE=1), shown as cached with its path, sha256 and
commit, and pair-checked; a model not in the cache still shows as not cached.

The cache is filled by `specbench models pull` from the local Hub server (tests/hub_server.py)
with a real GGUF (SmolLM2-135M Q4_1)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.fixtures.build import cli_process as cli
from tests.hub_server import FakeHub

pytestmark = pytest.mark.slow
REPO, FILE = "org/SmolLM2-135M-Instruct-GGUF", "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_dry_run_shows_cached_hub_models_and_checks_their_pair(tmp_path, llama_build, smol_q4):
    config = tmp_path / "cached.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "models": {
                    "hub_smol": {"hf": {"repo": REPO, "file": FILE}},
                    "draft": {"path": str(smol_q4.path)},
                    "absent": {"hf": {"repo": "org/Absent-GGUF", "file": "absent-Q8_0.gguf"}},
                },
                "pairs": {
                    "cached": {"target": "hub_smol", "draft": "draft"},
                    "later": {"target": "absent", "draft": "draft"},
                },
                "prompts": {"ids": ["code-02"]},
                "sweep": {"draft_max": [4]},
                "generation": {"n_predict": 16},
                "repetitions": 1,
                "warmup": 0,
            }
        )
    )
    hf_cache = tmp_path / "hf"
    hub = FakeHub(tmp_path / "hub").start()
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(hf_cache), "HF_HUB_OFFLINE": "",
           "SPECBENCH_RESULTS": str(tmp_path / "results")}  # fmt: skip
    try:
        commit = hub.add_commit(REPO, {FILE: smol_q4.path, "README.md": b"# smol\n"})
        pulled = cli("models", "pull", str(config), "--only", "hub_smol", env=env)
        assert pulled.returncode == 0, pulled.stderr
        before = len(hub.requests)
        online = cli("run", str(config), "--dry-run", env=env)  # the Hub is up and may be asked
        assert len(hub.requests) == before, "a dry run asked the Hub"
    finally:
        hub.stop()
    offline = cli("run", str(config), "--dry-run", env={**env, "HF_HUB_OFFLINE": "1"})
    down = cli("run", str(config), "--dry-run", env=env)  # the Hub is gone
    cached = hf_cache / f"models--{REPO.replace('/', '--')}" / "snapshots" / commit / FILE
    assert cached.is_file()
    for result in (online, offline, down):
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert (
            f"# model hub_smol: hf:{REPO}/{FILE}@main  cached {cached}  sha256 {smol_q4.sha256[:12]}"
            f"  commit {commit[:12]}"
        ) in out
        assert "# model absent: hf:org/Absent-GGUF/absent-Q8_0.gguf@main  not cached" in out
        assert "# pair cached: hub_smol + draft: ok" in out
        assert "# pair later: absent + draft: not checked (models not cached)" in out
        assert f" -m {cached} " in out  # the baseline and the speculative run use the cached file
        # the cached target's chat template rendered its prompt; only the absent one lacks it
        assert "model absent is not cached" in out and "model hub_smol is not cached" not in out
    assert not (tmp_path / "results").exists()
    assert Path(cached).resolve().name == smol_q4.sha256  # the blob is named by its sha256

"""Pre-flight of speculative methods on real GGUFs: refused in one line before anything runs.

SmolLM2 is architecture `llama` with no next-token-prediction layers; `smol_eagle3` is a generated
EAGLE-3 head (tests/fixtures/generated.py). No llama.cpp process runs: the refusals come from the
GGUF headers, so these take seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.fixtures.build import assert_one_line_error, cli

pytestmark = pytest.mark.slow


def refused(tmp_path: Path, *words: str, **data) -> str:
    config = tmp_path / "methods.yaml"
    config.write_text(yaml.safe_dump({"name": "methods", "prompts": {"ids": ["code-01"]}, **data}))
    results = tmp_path / "results"
    result = cli("run", str(config), env={"SPECBENCH_RESULTS": str(results)})
    line = assert_one_line_error(result, *words)
    assert result.returncode == 2  # a config that cannot run: bad input
    assert not results.exists() or not any(results.iterdir()), "a refused run left a run folder"
    return line


def test_eagle3_with_a_llama_draft_is_refused_naming_llama(tmp_path, llama_build, smol_f32, smol_q4):
    models = {"f32": {"path": str(smol_f32.path)}, "q4": {"path": str(smol_q4.path)}}
    refused(tmp_path, "pair 'e'", "draft-eagle3 needs an EAGLE-3 head (GGUF architecture eagle3)",
            "q4 is architecture llama", models=models,
            pairs={"e": {"target": "f32", "draft": "q4", "method": "draft-eagle3"}})  # fmt: skip
    refused(tmp_path, "sweep.method draft-dflash fits no pair", "q4 is architecture llama",
            models=models, pairs={"p": {"target": "f32", "draft": "q4"}},
            sweep={"method": ["draft", "draft-dflash"]}, runner="server")  # fmt: skip


def test_mtp_on_smollm2_is_refused(tmp_path, llama_build, smol_q4):
    refused(tmp_path, "draft-mtp needs a target with next-token-prediction (MTP) layers",
            "llama.nextn_predict_layers > 0", "target q4 is architecture llama and has none",
            models={"q4": {"path": str(smol_q4.path)}},
            pairs={"m": {"target": "q4", "method": "draft-mtp"}})  # fmt: skip
    # --out in folders that do not exist yet: none of them is left behind
    config = tmp_path / "methods.yaml"
    result = cli("run", str(config), "--out", str(tmp_path / "new" / "deeper" / "run"))
    assert_one_line_error(result, "draft-mtp needs a target")
    assert not (tmp_path / "new").exists()


def test_draft_simple_with_an_eagle3_head_is_refused(tmp_path, llama_build, smol_q4, smol_eagle3):
    refused(tmp_path, "draft (draft-simple) needs a complete draft model", "head is architecture eagle3",
            "use draft-eagle3",
            models={"q4": {"path": str(smol_q4.path)}, "head": {"path": str(smol_eagle3)}},
            pairs={"p": {"target": "q4", "draft": "head", "method": "draft-simple"}})  # fmt: skip


def test_a_method_the_build_lacks_is_refused(tmp_path, llama_build, smol_q4):
    refused(tmp_path, "does not support method ngram-future", "llama-speculative-simple takes: draft-simple",
            models={"q4": {"path": str(smol_q4.path)}},
            pairs={"p": {"target": "q4", "method": "ngram-future"}})  # fmt: skip

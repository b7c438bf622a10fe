"""Every shipped config's Hugging Face selection, run through specbench's own selection code against
recorded listings of its repo (tests/data/hf_listings/: written from the repos' naming and the
known facts, see each file's ``provenance``), so a selection that is ambiguous, or names a file
the repo does not have, fails here instead of on a user's first fetch. Also the config-time rule
that refuses a pattern matching both a single file and a split set of the same quant."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from specbench.base.errors import ConfigError, ModelError
from specbench.models.gguffile import split_name
from specbench.models.hf import RemoteFile, select_files
from specbench.models.spec import HfSource, split_ambiguity
from specbench.plan.config import load_config
from tests.fixtures.build import assert_one_line_error
from tests.fixtures.build import cli_process as cli

ROOT = Path(__file__).parents[2]
LISTINGS = ROOT / "tests" / "data" / "hf_listings"
SHIPPED = sorted([*(ROOT / "configs").glob("*.yaml"), *(ROOT / "configs" / "seeds").glob("*.yaml")])


def listing(repo: str) -> list[RemoteFile]:
    path = LISTINGS / (repo.replace("/", "--") + ".json")
    assert path.is_file(), f"no recorded listing for {repo}: add {path.relative_to(ROOT)}"
    data = json.loads(path.read_text())
    assert data["repo"] == repo
    return [RemoteFile(name=f["name"], size=f["size"]) for f in data["files"]]


def hf_selections() -> list[tuple[str, str, HfSource]]:
    out = []
    for path in SHIPPED:
        for name, spec in load_config(path).models.items():
            if spec.hf is not None:
                out.append((path.relative_to(ROOT).as_posix(), name, spec.hf))
    return out


SELECTIONS = hf_selections()


def test_the_shipped_configs_use_the_hub():
    assert len({c for c, _, _ in SELECTIONS}) >= 9  # every GPU config and every seed
    assert len({s.repo for _, _, s in SELECTIONS}) == len(list(LISTINGS.glob("*.json")))  # none stale


@pytest.mark.parametrize(
    ("config", "model", "src"), SELECTIONS, ids=lambda x: x if isinstance(x, str) else ""
)
def test_selection_resolves_to_one_file_or_one_split_set(config, model, src):
    remote = listing(src.repo)
    chosen = select_files(src, remote)
    names = [f.name for f in chosen]
    info = split_name(names[0])
    if info is None:
        assert len(names) == 1, f"{config}: {model} selects {names}"
    else:
        prefix, _, count = info
        assert names == [f"{prefix}-{i:05d}-of-{count:05d}.gguf" for i in range(1, count + 1)]
    assert names[0].endswith(".gguf")


def test_the_official_qwen_repos_hold_q4_k_m_twice_and_the_configs_pick_the_single_file():
    for repo, size in (
        ("Qwen/Qwen2.5-Coder-7B-Instruct-GGUF", 4_683_073_536),
        ("Qwen/Qwen2.5-Coder-32B-Instruct-GGUF", 19_851_336_672),
    ):
        remote = listing(repo)
        stem = repo.split("/")[1].removesuffix("-GGUF").lower() + "-q4_k_m"
        single = select_files(HfSource(repo=repo, file=f"{stem}.gguf"), remote)
        assert [(f.name, f.size) for f in single] == [(f"{stem}.gguf", size)]
        shards = select_files(HfSource(repo=repo, pattern=f"{stem}-*-of-*.gguf"), remote)
        assert len(shards) >= 2 and shards[0].name.startswith(f"{stem}-00001-of-")
        # what the configs said before: matches both; the listing-time check refuses it too
        with pytest.raises(ModelError) as exc:
            select_files(
                HfSource.model_construct(repo=repo, pattern=f"{stem}*.gguf", revision="main"), remote
            )
        assert f"{stem}.gguf" in str(exc.value) and f"{stem}-*-of-0000" in str(exc.value)
    picked = {(c, s.repo): s.file for c, _, s in SELECTIONS if s.repo.startswith("Qwen/Qwen2.5-Coder-")}
    assert picked[("configs/rtx4090-coder.yaml", "Qwen/Qwen2.5-Coder-32B-Instruct-GGUF")] == (
        "qwen2.5-coder-32b-instruct-q4_k_m.gguf"
    )
    assert picked[("configs/mac-metal.yaml", "Qwen/Qwen2.5-Coder-7B-Instruct-GGUF")] == (
        "qwen2.5-coder-7b-instruct-q4_k_m.gguf"
    )


@pytest.mark.parametrize(
    ("pattern", "single", "first"),
    [
        ("qwen2.5-coder-7b-instruct-q4_k_m*.gguf", "qwen2.5-coder-7b-instruct-q4_k_m.gguf",
         "qwen2.5-coder-7b-instruct-q4_k_m-00001-of-00002.gguf"),
        ("*Q4_K_M*.gguf", "Q4_K_M.gguf", "Q4_K_M-00001-of-00002.gguf"),
        ("*q8_0*", "q8_0.gguf", "q8_0-00001-of-00002.gguf"),
        ("Q5/model-[Qq]5_K_M*.gguf", "Q5/model-Q5_K_M.gguf", "Q5/model-Q5_K_M-00001-of-00002.gguf"),
        ("x-fp16?*.gguf", None, None),  # `?` needs one more character: never the single file
    ],
)  # fmt: skip
def test_a_pattern_open_after_the_quant_is_ambiguous(pattern, single, first):
    problem = split_ambiguity(pattern)
    if single is None:
        assert problem is None
        return
    assert problem is not None and single in problem and first in problem
    fixes = re.findall(r"'([^']*)' for the", problem)  # the patterns it offers instead
    assert len(fixes) == 2 and all(split_ambiguity(f) is None for f in fixes)


@pytest.mark.parametrize(
    "pattern",
    ["*-Q4_K_M.gguf", "*Q4_K_M-*-of-*.gguf", "Q4/*.gguf", "*.gguf", "tiny*.gguf", "*q4_k_m-*.gguf",
     "Meta-Llama-3.1-8B-Instruct-Q8_0.gguf"],
)  # fmt: skip
def test_patterns_that_cannot_match_both_pass(pattern):
    assert split_ambiguity(pattern) is None
    assert HfSource(repo="o/m", pattern=pattern).pattern == pattern


def test_an_ambiguous_pattern_is_refused_at_config_time_with_both_names(tmp_path):
    config = tmp_path / "c.yaml"
    repo7, repo05 = "Qwen/Qwen2.5-Coder-7B-Instruct-GGUF", "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF"
    config.write_text(
        "models:\n"
        f"  big: {{hf: {{repo: {repo7}, pattern: 'qwen2.5-coder-7b-instruct-q4_k_m*.gguf'}}}}\n"
        f"  small: {{hf: {{repo: {repo05}, file: qwen2.5-coder-0.5b-instruct-q8_0.gguf}}}}\n"
        "pairs: {p: {target: big, draft: small}}\n"
    )
    with pytest.raises(ConfigError) as exc:
        load_config(config)
    text = str(exc.value)
    assert text.startswith(f"{config}: models.big.hf: pattern ")
    assert "qwen2.5-coder-7b-instruct-q4_k_m.gguf" in text
    assert "qwen2.5-coder-7b-instruct-q4_k_m-00001-of-00002.gguf" in text and "\n" not in text
    with pytest.raises(ValidationError):
        HfSource(repo="o/m", pattern="*Q4_K_M*")
    # `specbench models check` (and run, pull) refuse it before anything is fetched: one line, exit 1
    for args in (("models", "check", "big", "small", "-c", str(config)), ("run", str(config), "--dry-run")):
        result = cli(*args, env={"HF_HUB_OFFLINE": "1"})
        line = assert_one_line_error(result, "models.big.hf", "would match both a single file")
        assert "qwen2.5-coder-7b-instruct-q4_k_m-00001-of-00002.gguf" in line

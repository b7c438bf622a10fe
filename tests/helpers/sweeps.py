"""Configs over placeholder model files for the planner's tests (planning never opens a model)."""

from __future__ import annotations

from pathlib import Path

from specbench.builder.buildinfo import BuildInfo, FlagSpelling
from specbench.plan.config import Config, config_from_mapping
from specbench.plan.prompts import render
from tests.helpers.realruns import threads

MODELS = {
    "big": Path("/models/big.gguf"),
    "small": Path("/models/small.gguf"),
    "mid": Path("/models/mid.gguf"),
}


def make_config(tmp_path: Path, **sections) -> Config:
    """A config over placeholder model files (planning never opens them)."""
    for p in MODELS.values():
        (tmp_path / p.name).write_bytes(b"GGUF")
    data = {
        "models": {name: {"path": p.name} for name, p in MODELS.items()},
        "pairs": {"p": {"target": "big", "draft": "small"}},
        "prompts": {"ids": ["code-02", "extr-01", "summ-01"]},
        "sweep": {"method": ["draft", "ngram-simple"], "draft_max": [4, 8, 16]},
        "generation": {"n_predict": 64, "threads": threads()},
        "repetitions": 2,
    }
    data.update(sections)
    return config_from_mapping(data, tmp_path, "test.yaml")


def rendered(config: Config):
    """Prompts rendered for every target without opening a model (the plain fallback)."""
    return [render(p, t, None) for t in config.targets() for p in config.prompt_list()]


def with_flags(build: BuildInfo, role: str, **flags) -> BuildInfo:
    """The same build, with one binary spelling its options the way an older llama.cpp did."""
    copy = build.model_copy(deep=True)
    copy.binaries[role].flags = FlagSpelling(**flags)
    return copy


def pairs(argv: list[str]) -> dict[str, str]:
    """Options followed by a value, as a dict (flags without value are skipped)."""
    return {a: b for a, b in zip(argv, argv[1:], strict=False) if a.startswith("-") and not b.startswith("-")}

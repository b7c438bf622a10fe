"""Invocations, plans and manifests around the stand-in binaries of tests/fakebins."""

from __future__ import annotations

from pathlib import Path

from specbench.builder.buildinfo import BuildInfo
from specbench.plan.invocation import Invocation, Plan
from specbench.results.manifest import Manifest
from specbench.results.records import Generation

FAKEBINS = Path(__file__).parents[1] / "fakebins"


PROMPT = "<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n"


def inv(binary: str, role: str = "speculative", prompt_id: str = "p1", rep: int = 0, **kw) -> Invocation:
    spec = role == "speculative"
    fields = dict(
        role=role, pair="pair" if spec else None, model="target", draft="draft" if spec else None,
        method="draft" if spec else "none", draft_max=8 if spec else None, draft_min=0 if spec else None,
        p_min=0.0 if spec else None, ngl=0, ngld=0 if spec else None, prompt_id=prompt_id, category="chat",
        repetition=rep, binary_role="speculative_simple" if spec else "completion",
        argv=[str(FAKEBINS / binary), "-m", "target.gguf", "-p", PROMPT], prompt_text=PROMPT,
        prompt_echoed=True, generation=Generation(n_predict=32), timeout_s=10.0,
    )  # fmt: skip
    fields.update(kw)
    return Invocation(**fields)


def process(invocations: list[Invocation]) -> Plan:
    return Plan(runner="process", invocations=invocations)


def manifest(run_dir: Path, env_info) -> Manifest:
    build = BuildInfo(
        key="fake", source="fakebins", backend="cpu", cmake_args=[], bin_dir=str(FAKEBINS), binaries={}
    )
    return Manifest(run_id=run_dir.name, name="fake", config={}, build=build, env=env_info, models={})

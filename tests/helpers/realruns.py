"""Configs for the tests that run the real llama.cpp build on SmolLM2 (small: one cell, short prompts)."""

from __future__ import annotations

import json
import os
import stat
import uuid
from pathlib import Path

import yaml

from specbench.builder.buildinfo import BuildInfo


def threads() -> int:
    """llama.cpp threads for a real run: the cores this test process may use, at most 2 (one where
    `make test` pins each worker to a core of its own: tests/conftest.py)."""
    return min(2, len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else 2


def write_config(path: Path, **data) -> Path:
    """A config file; without the speed sentinel unless ``sentinel=True``: its two readings are a
    third of a four-sample run's time, and the tests that read the sentinel ask for it."""
    data.setdefault("sentinel", False)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def short_prompt(tmp: Path) -> Path:
    """One short chat prompt (a JSONL prompts file): prompt evaluation is most of a 32-token run."""
    ask = "Write a Python function that returns the sum of a list of numbers."
    line = {"id": "sum", "category": "code", "messages": [{"role": "user", "content": ask}]}
    path = tmp / "prompts.jsonl"
    path.write_text(json.dumps(line) + "\n")
    return path


def one_cell(tmp: Path, f32, q4, **extra) -> Path:
    data = dict(
        name="onecell",
        models={"f32": {"path": str(f32.path)}, "q4": {"path": str(q4.path)}},
        pairs={"smol": {"target": "f32", "draft": "q4"}},
        prompts={"file": str(short_prompt(tmp))},
        sweep={"draft_max": [8]},
        generation={"n_predict": 32, "threads": threads()},
        repetitions=2,
        warmup=1,
        timeout_s=300,
    )
    data.update(extra)
    return write_config(tmp / "onecell.yaml", **data)


def ngram_config(tmp: Path, q4) -> tuple[Path, str]:
    """The n-gram method on the Q4 model alone (no draft model: the cheapest real speculative run);
    the prompt carries a marker to find its llama.cpp processes by, and repeats a block longer than
    the n-gram size (12 tokens) so the continuation repeats it and the lookup drafts."""
    marker = f"specbench-{uuid.uuid4().hex[:12]}"
    prompts = tmp / "prompts.jsonl"
    block = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
    text = f"# {marker}\n" + (block * 4).rstrip("\n")  # ends inside the pattern, as it goes on
    prompts.write_text(json.dumps({"id": "code", "category": "code", "text": text}) + "\n")
    data = dict(
        name="faults",
        models={"q4": {"path": str(q4.path)}},
        pairs={"lookup": {"target": "q4", "method": "ngram-simple"}},
        prompts={"file": str(prompts)},
        generation={"n_predict": 64, "threads": threads()},
        repetitions=3,
        warmup=0,
    )
    return write_config(tmp / "faults.yaml", **data), marker


ASKS = {
    "sum": "Write a Python function that returns the sum of a list of numbers.",
    "capital": "Name the capital of France and one famous building there.",
}


def prompts_file(tmp: Path) -> Path:
    path = tmp / "prompts.jsonl"
    lines = [
        {"id": k, "category": "chat", "messages": [{"role": "user", "content": v}]} for k, v in ASKS.items()
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def server_config(tmp: Path, f32, q4, **extra) -> dict:
    data = dict(
        name="srv",
        runner="server",
        models={"f32": {"path": str(f32.path)}, "q4": {"path": str(q4.path)}},
        pairs={"smol": {"target": "f32", "draft": "q4"}},
        prompts={"file": str(prompts_file(tmp))},
        sweep={"draft_max": [8], "parallel": [1, 2]},
        generation={"n_predict": 16, "threads": threads(), "ctx_size": 512},
        repetitions=1,
        warmup=1,
        timeout_s=120,
        sentinel=False,  # see write_config
    )
    data.update(extra)
    return data


def crashing_on_q4_1(info: BuildInfo, folder: Path) -> BuildInfo:
    """``info`` with every binary behind a wrapper that segfaults on a Q4_1 model without --no-repack."""
    folder.mkdir(parents=True, exist_ok=True)
    out = info.model_copy(deep=True)
    for role, b in out.binaries.items():
        wrapper = folder / b.name
        wrapper.write_text(
            "#!/bin/sh\n"
            'case " $* " in *Q4_1*) case " $* " in *" --no-repack "*) ;; *) kill -SEGV $$ ;; esac ;; esac\n'
            f'exec "{b.path}" "$@"\n'
        )
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
        out.binaries[role] = b.model_copy(update={"path": str(wrapper)})
    out.bin_dir, out.selftest = str(folder), None
    return out

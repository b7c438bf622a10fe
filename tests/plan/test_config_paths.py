"""Every config value that becomes a path is refused, where the config is read, when it would lead
outside its folder (issue 58: ``pypi.filename: /home/me/notes.txt`` replaced a user's file,
``../../x.gguf`` wrote outside SPECBENCH_HOME, ``hf.file: ../../../../etc/passwd`` passed the dry run).

The fields are found from the config's pydantic models (the ``PathRole`` their types carry), and
every other text field must be named below with why it never becomes a path: a new field is
classified before it can be forgotten."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.config import Config, config_from_mapping
from tests.helpers.pathfields import leaves, path_locations

# Text fields that never become a path, and why (a new one must be added here or given a PathRole).
NOT_PATHS = {
    "Config.args": "llama.cpp arguments, passed as a list",
    "LlamaCppConfig.args": "llama.cpp arguments, passed as a list",
    "PairConfig.args": "llama.cpp arguments, passed as a list",
    "NamedArgs.args": "llama.cpp arguments, passed as a list",
    "LlamaCppConfig.cmake_args": "cmake -D arguments, passed as a list",
    "LlamaCppConfig.ref": "a git ref, resolved by git (refused when it starts with '-')",
    "DeriveSource.from_": "a name under models:",
    "DeriveSource.quant": "one of llama-quantize's types",
    "PairConfig.target": "a name under models:",
    "PairConfig.draft": "a name under models:",
    "PairConfig.method": "a method name",
    "SweepConfig.method": "method names",
    "PairConfig.runs_on": "a CI runner label (written into a JSON matrix)",
    "RunsOnConfig.ngl": "CI runner labels",
    "PromptsConfig.categories": "a filter on the prompts",
    "PromptsConfig.ids": "a filter on the prompts",
    "HfSource.unverified": "a note shown by --dry-run",
    "PypiSource.package": "a pip requirement, NAME==VERSION",
    "PypiSource.chunks": "pip requirements, NAME==VERSION",
    "PypiSource.sha256": "64 hex digits",
    "Expectation.note": "text shown by report",
    "Expectation.acceptance": "a published figure (a number or its text)",
    "Expectation.baseline_tps": "a published figure (a number or its text)",
    "Expectation.spec_tps": "a published figure (a number or its text)",
    "Expectation.speedup": "a published figure (a number or its text)",
    "Expectation.source": "text shown by report",
}
# llama.cpp option values (every OptionValues/SweepOptions key of text)
OPTION_TEXT = ("cache_type_k", "cache_type_v", "device", "override_tensor", "tensor_split", "synth_rates")

# What each kind of field must refuse: absolute paths, '..', and what a name may not hold.
ESCAPES = ["/home/me/notes.txt", "../../../../x.gguf", "a/../../../b", "..", "C:/x"]
BAD = {  # (a NUL anywhere in a config is refused before these rules: tests/plan/test_config.py)
    "name": [*ESCAPES, "a/b", ".", "", "x\x01y"],
    "part": [*ESCAPES, "a/b.gguf", ".", "", "x\x01.gguf"],
    "relative": [*ESCAPES, "../../etc", "a//b", "./a", "~/x", "x\ny"],
    "repo": [*ESCAPES, "../../../etc", "a/..", "a/b/c", "owner/.."],
    "local": ["x\x01y", "a\nb"],  # a path the user chose: anywhere, but one the system can take
}


@pytest.fixture
def full(tmp_path) -> tuple[dict, Path]:
    """A config that uses every field that becomes a path (and loads)."""
    (tmp_path / "big.gguf").write_bytes(b"GGUF")
    (tmp_path / "tree").mkdir()
    (tmp_path / "context.txt").write_text("We the People of the United States, " * 40)
    (tmp_path / "prompts.jsonl").write_text(json.dumps({"id": "p1", "category": "chat", "text": "hi"}) + "\n")
    data = {
        "name": "t",
        "llama_cpp": [{"label": "base", "source": "tree"}, {"label": "head", "source": "tree"}],
        "models": {
            "big": {"path": "big.gguf"},
            "hub": {"hf": {"repo": "org/tiny", "file": "q4/tiny.gguf", "revision": "main"}},
            "glob": {"hf": {"repo": "org/tiny", "pattern": "*-Q4_0.gguf"}},
            "wheel": {"pypi": {"package": "tiny==1.0", "member": "tiny/m.gguf", "filename": "m.gguf"}},
            "q8": {"derive": {"from": "big", "quant": "Q8_0"}},
        },
        "pairs": {"p": {"target": "big", "draft": "hub"}},
        "prompts": {"file": "prompts.jsonl"},
        "context": {"file": "context.txt"},
        "sweep": {"args": [{"label": "plain", "args": ["--no-warmup"]}]},
    }
    config_from_mapping(copy.deepcopy(data), tmp_path, "cfg.yaml")  # it loads as it is
    return data, tmp_path


def _set(data: dict, loc: tuple, value: str, is_key: bool) -> dict:
    out = copy.deepcopy(data)
    node = out
    for part in loc[:-1]:
        node = node[part]
    if is_key:
        node[value] = node.pop(loc[-1])
    else:
        node[loc[-1]] = value
    return out


def _dotted(loc: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


def test_every_text_field_is_a_path_or_named_as_none():
    found = leaves(Config)
    unclassified = sorted(
        k
        for k, role in found.items()
        if role is None and k not in NOT_PATHS and not k.split(".")[-1].startswith(OPTION_TEXT)
    )
    assert not unclassified, (
        f"give these a PathRole type (base.paths) or add them to NOT_PATHS: {unclassified}"
    )
    assert not [k for k in NOT_PATHS if k not in found], "NOT_PATHS names a field that is gone"


def test_the_full_config_reaches_every_path_field(full):
    """Each field with a PathRole appears in ``full`` (so the next test tries it)."""
    data, _ = full
    fields = {k for k, role in leaves(Config).items() if role is not None}
    reached = {found.field for found in path_locations(Config, data)}
    assert fields == reached, f"add these to the `full` config: {sorted(fields - reached)}"
    assert len(fields) >= 14


def _cases():
    # the locations come from the models and the full config; built per test from the fixture
    return [(kind, value) for kind, values in BAD.items() for value in values]


@pytest.mark.parametrize(("kind", "value"), _cases(), ids=lambda v: repr(v))
def test_every_path_field_refuses_what_would_leave_its_folder(full, kind, value):
    data, base = full
    tried = 0
    for loc, role, is_key, _ in path_locations(Config, data):
        if role.kind != kind:
            continue
        tried += 1
        with pytest.raises(ConfigError) as info:
            config_from_mapping(_set(data, loc, value, is_key), base, "cfg.yaml")
        message = str(info.value)
        assert "\n" not in message, message
        key = _dotted(loc[:-1] + (value,)) if is_key else _dotted(loc)
        assert message.startswith(f"cfg.yaml: {key}: "), (key, message)  # names the key...
        assert repr(value)[1:-1][:20] in message, message  # ...and the value
    assert tried, f"no field of kind {kind} in the full config"

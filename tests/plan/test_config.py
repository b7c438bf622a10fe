"""Config loading: the quickstart shape validates, and every bad input is a one-line ConfigError
naming the YAML location."""

from __future__ import annotations

import pytest
import yaml

from specbench.plan.config import config_schema, load_config
from specbench.results.records import Generation
from tests.helpers.configs import GOOD, error_of, write


def test_good_config_defaults_and_relative_paths(cfg_dir, monkeypatch, tmp_path_factory):
    path = write(cfg_dir, GOOD)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))  # relative paths follow the file, not the cwd
    cfg = load_config(path)
    assert cfg.base_dir == cfg_dir.resolve()
    assert cfg.repetitions == 3 and cfg.warmup == 1
    assert cfg.generation == Generation(n_predict=32, threads=2)
    assert type(cfg.generation) is Generation
    assert cfg.generation.temperature == 0.0
    assert cfg.sweep.draft_max == [4, 8] and cfg.sweep.p_min == [0.0]
    assert cfg.speculative_role is None  # auto: the speculative program the build's tree has
    assert cfg.targets() == ["big"]
    assert cfg.prompts.suite == "builtin" and len(cfg.prompt_list()) >= 24


def test_name_defaults_to_file_stem(cfg_dir):
    cfg = load_config(write(cfg_dir, GOOD.replace("name: t\n", ""), "my-sweep.yaml"))
    assert cfg.name == "my-sweep"


def test_overrides_apply_before_validation(cfg_dir):
    path = write(cfg_dir, GOOD)
    cfg = load_config(
        path, ["repetitions=1", "generation.threads=1", "sweep.draft_max=[4,8,16]", "sweep.ngl=[0, 99]"]
    )
    assert cfg.repetitions == 1
    assert cfg.generation.threads == 1
    assert cfg.sweep.draft_max == [4, 8, 16]
    assert cfg.sweep.ngl == [0, 99]
    # a section missing from the file is created by --set
    cfg = load_config(path, ["prompts.categories=[code]"])
    assert {p.category for p in cfg.prompt_list()} == {"code"}


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("repetitions", "expected KEY=VALUE"),
        ("=3", "expected KEY=VALUE"),
        ("generation..threads=1", "expected KEY=VALUE"),
        ("generation.threads.x=1", "generation.threads is not a mapping"),
        ("repetitions.x=1", "--set repetitions.x: repetitions: must be a whole number >= 1 or `auto`"),
        ("bogus=1", "--set bogus: bogus: unknown key"),
        ("sweep.draft_max=[4, 0]", "--set sweep.draft_max: sweep.draft_max[1]: must be >= 1"),
        ("sweep.draft_max=[4", "not valid YAML"),
        ("generation.n_predict=1", "--set generation.n_predict: generation.n_predict: must be >= 2"),
        ("repetitions=true", "--set repetitions: repetitions: must be a number, not true"),
        ("repetitions=1000000", "--set repetitions: repetitions: must be at most 1000 (got 1000000)"),
        ("max_repetitions=5000", "--set max_repetitions: max_repetitions: must be <= 1000"),
        ("generation.temperature=yes", "generation.temperature: must be a number, not true"),
        (
            "sweep.draft_max=[4, yes]",
            "--set sweep.draft_max: sweep.draft_max: must be a list of numbers, not true",
        ),
        ("sweep.p_min=[off]", "sweep.p_min: must be a list of numbers, not false"),
        ("prompts.ids=[nope-01]", "--set prompts.ids: prompts.ids: unknown prompt id 'nope-01'"),
    ],
)
def test_bad_overrides(cfg_dir, override, expected):
    assert expected in error_of(write(cfg_dir, GOOD), [override])


def test_a_conflict_of_two_overrides_names_both(cfg_dir):
    message = error_of(write(cfg_dir, GOOD), ["sweep.draft_min=[9]", "sweep.draft_max=[4]"])
    assert message.startswith("--set sweep.draft_max, --set sweep.draft_min: sweep: every draft_min")


def test_byte_order_mark_is_not_yaml(cfg_dir):
    path = cfg_dir / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert load_config(path).name == "t"


def test_missing_file(tmp_path):
    assert "does not exist" in error_of(tmp_path / "nope.yaml")


def test_not_yaml(tmp_path):
    message = error_of(write(tmp_path, "models: [a, b\npairs: {}\n"))
    assert "not valid YAML" in message and "config.yaml:" in message


def test_not_a_mapping(tmp_path):
    assert "must be a YAML mapping" in error_of(write(tmp_path, "- a\n- b\n"))
    assert "empty" in error_of(write(tmp_path, "# nothing\n"))


def test_unknown_key_names_location(cfg_dir):
    assert error_of(write(cfg_dir, GOOD + "colour: blue\n")).endswith("config.yaml: colour: unknown key")
    bad = GOOD.replace("  threads: 2", "  thread: 2")
    assert "generation.thread: unknown key" in error_of(write(cfg_dir, bad))
    bad = GOOD.replace("draft_max: [4, 8]", "draftmax: [4, 8]")
    assert "sweep.draftmax: unknown key" in error_of(write(cfg_dir, bad))
    bad = GOOD.replace("{path: big.gguf}", "{path: big.gguf, revision: x}")
    assert "models.big.revision: unknown key" in error_of(write(cfg_dir, bad))


def test_wrong_type(cfg_dir):
    message = error_of(write(cfg_dir, GOOD + "repetitions: many\n"))
    assert "config.yaml: repetitions: " in message and "'many'" in message
    message = error_of(write(cfg_dir, GOOD.replace("draft_max: [4, 8]", "draft_max: 8")))
    assert "sweep.draft_max:" in message


def test_empty_sweep_list(cfg_dir):
    message = error_of(write(cfg_dir, GOOD.replace("draft_max: [4, 8]", "draft_max: []")))
    assert message.endswith("config.yaml: sweep.draft_max: must not be empty")


@pytest.mark.parametrize("bad", ["[4, 8, 0]", "[4, 8, -2]"])
def test_draft_max_must_be_positive(cfg_dir, bad):
    message = error_of(write(cfg_dir, GOOD.replace("draft_max: [4, 8]", f"draft_max: {bad}")))
    assert "config.yaml: sweep.draft_max[2]: must be >= 1" in message


def test_several_errors_reported_as_first_plus_count(cfg_dir):
    message = error_of(write(cfg_dir, GOOD + "repetitions: 0\nwarmup: -1\n"))
    assert "repetitions: must be a whole number >= 1 or `auto`" in message and message.endswith(
        "(and 1 more)"
    )


def test_unknown_method_and_sweep_duplicates(cfg_dir):
    # a well-formed name the build may lack is refused at plan time (tests/plan/test_methods.py)
    message = error_of(write(cfg_dir, GOOD.replace("[draft, ngram-simple]", "[draft, 'ngram mod']")))
    assert "sweep.method[1]: " in message and "'ngram mod' is no method name" in message
    message = error_of(write(cfg_dir, GOOD.replace("[draft, ngram-simple]", "[draft, draft-simple]")))
    assert "sweep.method: lists draft more than once" in message
    message = error_of(write(cfg_dir, GOOD.replace("draft_max: [4, 8]", "draft_max: [4, 4]")))
    assert "sweep.draft_max: lists 4 more than once" in message


def test_pair_with_unknown_model(cfg_dir):
    message = error_of(write(cfg_dir, GOOD.replace("draft: small", "draft: tiny")))
    assert "config.yaml: pairs.p.draft: unknown model 'tiny' (models: big, small)" in message
    message = error_of(write(cfg_dir, GOOD.replace("target: big", "target: huge")))
    assert "pairs.p.target: unknown model 'huge'" in message


def test_pair_needs_draft_or_method(cfg_dir):
    message = error_of(write(cfg_dir, GOOD.replace("{target: big, draft: small}", "{target: big}")))
    assert "pairs.p: a pair needs `draft` (a model), `method`" in message
    cfg = load_config(write(cfg_dir, GOOD.replace("draft: small}", "method: ngram-mod}")))
    assert cfg.pairs["p"].method == "ngram-mod"


def test_duplicate_model_names(cfg_dir):
    text = GOOD.replace(
        "  small: {path: sub/small.gguf}\n", "  small: {path: sub/small.gguf}\n  big: {path: x.gguf}\n"
    )
    message = error_of(write(cfg_dir, text))
    assert "config.yaml:5: models: duplicate key 'big' (first on line 3)" in message


def test_derive_from_unknown_model(cfg_dir):
    text = GOOD.replace("  small: {path: sub/small.gguf}\n", "  small: {derive: {from: smol, quant: Q8_0}}\n")
    assert "models.small.derive.from: unknown model 'smol'" in error_of(write(cfg_dir, text))


def test_paths_that_do_not_exist(cfg_dir):
    message = error_of(write(cfg_dir, GOOD.replace("sub/small.gguf", "sub/missing.gguf")))
    assert "models.small.path:" in message and str(cfg_dir / "sub" / "missing.gguf") in message
    message = error_of(write(cfg_dir, GOOD + "prompts: {file: prompts.jsonl}\n"))
    assert "prompts.file:" in message and "does not exist" in message
    message = error_of(write(cfg_dir, GOOD + "llama_cpp: {source: ../no-llama}\n"))
    assert "llama_cpp.source:" in message and "is not a folder" in message
    (cfg_dir / "adir").mkdir()  # a folder where a file is needed is said so, not "does not exist"
    message = error_of(write(cfg_dir, GOOD.replace("sub/small.gguf", "adir")))
    assert "models.small.path:" in message and "is a folder, not a GGUF file" in message
    message = error_of(write(cfg_dir, GOOD + "prompts: {file: adir}\n"))
    assert "prompts.file:" in message and "is a folder, not a prompts file" in message


def test_prompts_file_relative_to_config_and_bad_line(cfg_dir, monkeypatch, tmp_path_factory):
    (cfg_dir / "prompts.jsonl").write_text(
        '{"id": "a", "category": "code", "text": "def f():"}\n'
        "\n"
        '{"id": "b", "category": "chat", "messages": [{"role": "user", "content": "hi"}]}\n'
    )
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    cfg = load_config(write(cfg_dir, GOOD + "prompts: {file: prompts.jsonl}\n"))
    assert [p.id for p in cfg.prompt_list()] == ["a", "b"]
    with (cfg_dir / "prompts.jsonl").open("a") as fh:
        fh.write('{"id": "c", "category": "chat", "messages": [}\n')
    message = error_of(cfg_dir / "config.yaml")
    assert f"{cfg_dir / 'prompts.jsonl'}:4: not valid JSON" in message


def test_prompt_selection_errors(cfg_dir):
    message = error_of(write(cfg_dir, GOOD + "prompts: {categories: [poetry]}\n"))
    assert "prompts.categories: unknown category 'poetry'" in message
    message = error_of(write(cfg_dir, GOOD + "prompts: {ids: [code-01, nope-9]}\n"))
    assert "prompts.ids: unknown prompt id 'nope-9'" in message
    message = error_of(write(cfg_dir, GOOD + "prompts: {suite: builtin, file: x.jsonl}\n"))
    assert "give either `suite` or `file`" in message


def test_reserved_fields_cannot_be_set(cfg_dir):
    assert "base_dir: unknown key" in error_of(write(cfg_dir, GOOD + "base_dir: /\n"))


def test_dump_round_trips(cfg_dir):
    cfg = load_config(
        write(cfg_dir, GOOD.replace("{path: sub/small.gguf}", "{derive: {from: big, quant: q8_0}}"))
    )
    data = cfg.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert data["models"]["small"]["derive"] == {"from": "big", "quant": "Q8_0"}
    again = load_config(write(cfg_dir, yaml.safe_dump(data), "again.yaml"))
    assert again.model_dump(mode="json", by_alias=True, exclude_none=True) == data


def test_runner_and_parallel(cfg_dir):
    path = write(cfg_dir, GOOD)
    assert (load_config(path).runner, load_config(path).sweep.parallel) == ("process", [1])
    cfg = load_config(path, ["runner=server", "sweep.parallel=[1,2]"])
    assert (cfg.runner, cfg.sweep.parallel) == ("server", [1, 2])
    message = error_of(path, ["sweep.parallel=[1,4]"])
    assert "sweep.parallel" in message and "runner: server" in message
    assert "runner" in error_of(path, ["runner=threads"])
    assert "sweep.parallel[0]" in error_of(path, ["runner=server", "sweep.parallel=[0]"])


def test_a_config_text_no_command_line_can_carry_is_refused_naming_its_key(tmp_path):
    """Every config value may reach an argv, an environment or a request: a NUL (YAML's "\\0") is
    refused where the config is read, naming the key, in the file or in --set."""
    path = write(tmp_path, GOOD)
    err = error_of(path, ["generation.threads=1", 'models.m2.path="a\\0b.gguf"'])
    assert "models.m2.path: holds a NUL character (\\u0000) at character 2" in err
    assert "no command line or request can carry" in err and "\n" not in err


def test_list_defaults_are_shown_with_their_keys_in_pydantics_sorted_order():
    """A list default (draft_max's [8], cmake_args' []) is a plain default that pydantic copies per
    instance, so the schema shows it where it shows every other default: keys sorted in each property
    (a factory's default was written after pydantic's keys, out of that order)."""
    schema = config_schema()
    defs = schema["$defs"]
    assert defs["SweepConfig"]["properties"]["draft_max"]["default"] == [8]
    assert defs["LlamaCppConfig"]["properties"]["cmake_args"]["default"] == []
    assert defs["RunsOnConfig"]["properties"]["ngl"]["default"] == {}
    for props in [schema["properties"], *(d.get("properties", {}) for d in defs.values())]:
        for name, prop in props.items():
            assert list(prop) == sorted(prop), name

"""specbench.builder.probe: flag spellings from --help, for help texts of every era and the real binaries.

The older help texts are excerpts in the exact layout of their era (2023 ``gpt_print_usage``,
late-2024 ``common/arg.cpp``, early-2026 with ``--spec-type``), kept as data.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from specbench.builder.probe import flags_from_help, parse_help, probe_binary
from specbench.builder.source import PINNED_COMMIT
from tests.helpers.trees import HELP

HELP_2023_SPECULATIVE = """
usage: ./speculative [options]

options:
  -h, --help            show this help message and exit
  --version             show version and build info
  -s SEED, --seed SEED  RNG seed (default: -1, use random seed for < 0)
  -n N, --n-predict N   number of tokens to predict (default: -1, -1 = infinity, -2 = until context filled)
  --draft N             number of tokens to draft for speculative decoding (default: 16)
  -np N, --parallel N   number of parallel sequences to decode (default: 1)
  -ps N, --p-split N    speculative decoding split probability (default: 0.1)
  -m FNAME, --model FNAME
                        model path (default: models/7B/ggml-model-f16.gguf)
  -md FNAME, --model-draft FNAME
                        draft model for speculative decoding (default: models/7B/ggml-model-f16.gguf)
  -ngl N, --n-gpu-layers N
                        number of layers to store in VRAM
  -ngld N, --n-gpu-layers-draft N
                        number of layers to store in VRAM for the draft model
  --no-display-prompt   don't print prompt at generation (default: false)
"""

HELP_2024_SPECULATIVE = """
----- common params -----

-h,    --help, --usage                  print usage and exit
--version                               show version and build info
-n,    --predict, --n-predict N         number of tokens to predict (default: -1, -1 = infinity, -2 = until
                                        context filled)
                                        (env: LLAMA_ARG_N_PREDICT)
-ngl,  --gpu-layers, --n-gpu-layers N   number of layers to store in VRAM
                                        (env: LLAMA_ARG_N_GPU_LAYERS)

----- example-specific params -----

--draft-max, --draft, --draft-n N       number of tokens to draft for speculative decoding (default: 16)
                                        (env: LLAMA_ARG_DRAFT_MAX)
--draft-min, --draft-n-min N            minimum number of draft tokens to use for speculative decoding
                                        (default: 5)
                                        (env: LLAMA_ARG_DRAFT_MIN)
--draft-p-split P                       speculative decoding split probability (default: 0.1)
                                        (env: LLAMA_ARG_DRAFT_P_SPLIT)
--draft-p-min P                         minimum speculative decoding probability (greedy) (default: 0.8)
                                        (env: LLAMA_ARG_DRAFT_P_MIN)
-ngld, --gpu-layers-draft, --n-gpu-layers-draft N
                                        number of layers to store in VRAM for the draft model
                                        (env: LLAMA_ARG_N_GPU_LAYERS_DRAFT)
-md,   --model-draft FNAME              draft model for speculative decoding (default: unused)
                                        (env: LLAMA_ARG_MODEL_DRAFT)
"""

HELP_2026_EARLY_SERVER = """
--draft-max, --draft, --draft-n N       number of tokens to draft for speculative decoding (default: 16)
                                        (env: LLAMA_ARG_DRAFT_MAX)
--draft-min, --draft-n-min N            minimum number of draft tokens to use for speculative decoding
                                        (default: 0)
--draft-p-min P                         minimum speculative decoding probability (greedy) (default: 0.75)
-ngld, --gpu-layers-draft, --n-gpu-layers-draft N
                                        max. number of draft model layers to store in VRAM (default: auto)
-md,   --model-draft FNAME              draft model for speculative decoding (default: unused)
--spec-type [none|ngram-cache|ngram-simple|ngram-map-k|ngram-map-k4v|ngram-mod]
                                        type of speculative decoding to use when no draft model is provided
                                        (default: none)
                                        (env: LLAMA_ARG_SPEC_TYPE)
"""

HELP_PINNED_EXCERPT = """
--spec-draft-ngl, -ngld, --gpu-layers-draft, --n-gpu-layers-draft N
                                        max. number of draft model layers to store in VRAM, either an exact
                                        number, 'auto', or 'all' (default: auto)
--spec-draft-model, -md, --model-draft FNAME
                                        draft model for speculative decoding (default: unused)
--spec-type none,draft-simple,ngram-simple,ngram-cache
                                        comma-separated list of types of speculative decoding to use (default:
                                        none)
--spec-draft-n-max N                    number of tokens to draft for speculative decoding (default: 3)
--spec-draft-p-min, --draft-p-min P     minimum speculative decoding probability (greedy) (default: 0.00)
--draft, --draft-n, --draft-max N       the argument has been removed. use --spec-draft-n-max or
                                        --spec-ngram-mod-n-max
--draft-min, --draft-n-min N            the argument has been removed. use --spec-draft-n-min or
                                        --spec-ngram-mod-n-min
"""


def test_2023_speculative():
    f = flags_from_help(HELP_2023_SPECULATIVE)
    assert (f.draft_max, f.draft_min, f.p_min) == ("--draft", None, None)
    assert (f.ngld, f.model_draft, f.spec_type, f.spec_types) == ("-ngld", "-md", None, [])
    assert f.no_display_prompt == "--no-display-prompt"


def test_2024_speculative():
    f = flags_from_help(HELP_2024_SPECULATIVE)
    assert (f.draft_max, f.draft_min, f.p_min) == ("--draft-max", "--draft-min", "--draft-p-min")
    assert (f.ngld, f.model_draft, f.spec_type) == ("-ngld", "-md", None)
    assert f.no_display_prompt is None


def test_2026_early_server_spells_draft_max():
    assert flags_from_help(HELP_2026_EARLY_SERVER).draft_max == "--draft-max"


NGRAM_SPEC_TYPES = ["none", "ngram-cache", "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod"]


@pytest.mark.parametrize(
    "help_text",
    [HELP_2026_EARLY_SERVER, (HELP / "ik-0.1.5-llama-speculative.txt").read_text()],
    ids=["2026-bracketed", "ik-spaced"],
)
def test_spec_type_values_are_read_bracketed_or_spaced(help_text):
    """Early 2026 lists them `[none|ngram-cache|...]`, ik_llama.cpp `ngram - cache`: the same list."""
    f = flags_from_help(help_text)
    assert f.spec_type == "--spec-type"
    assert f.spec_types == NGRAM_SPEC_TYPES


def test_pinned_era_skips_removed_spellings():
    f = flags_from_help(HELP_PINNED_EXCERPT)
    assert f.draft_max == "--spec-draft-n-max"
    assert f.draft_min is None  # only the removed --draft-min is listed in this excerpt
    assert f.p_min == "--spec-draft-p-min"
    assert (f.ngld, f.model_draft) == ("--spec-draft-ngl", "--spec-draft-model")
    assert f.spec_types == ["none", "draft-simple", "ngram-simple", "ngram-cache"]


def test_ik_fork_takes_the_classic_draft_method():
    """ik_llama.cpp: `-md` speculates alone (its --spec-type has no draft-simple), long-only options
    sit at column 9 and n-gram sizes are shared (its spaced `ngram - cache` values: above)."""
    f = flags_from_help((HELP / "ik-0.1.5-llama-speculative.txt").read_text())
    assert (f.model_draft, f.draft_max, f.draft_min, f.p_min) == (
        "-md",
        "--draft-max",
        "--draft-min",
        "--draft-p-min",
    )
    assert f.classic_draft
    assert (f.no_display_prompt, f.no_escape, f.log_verbosity) == (
        "--no-display-prompt",
        "--no-escape",
        "--verbosity",
    )
    simple = f.ngram_sizes["ngram-simple"]
    assert (simple.n, simple.m) == ("--spec-ngram-size-n", "--spec-ngram-size-m")
    assert not flags_from_help(HELP_PINNED_EXCERPT).classic_draft  # the pin needs --spec-type draft-simple
    assert flags_from_help(HELP_2024_SPECULATIVE).classic_draft


def test_the_2024_trees_shared_table_with_long_only_options_at_column_9():
    """llama-cpp-python 0.2.90's llama.cpp (captured): `         --draft N` and `--verbosity N`
    sit at column 9, so an entry may start deeper than the 2024+ arg.cpp layout's column 0."""
    f = flags_from_help((HELP / "2024-0.2.90-llama-speculative.txt").read_text())
    assert (f.draft_max, f.model_draft, f.draft_min, f.p_min, f.spec_type) == (
        "--draft",
        "-md",
        None,
        None,
        None,
    )
    assert (
        f.classic_draft and f.log_verbosity == "--verbosity" and f.no_display_prompt == "--no-display-prompt"
    )
    assert "-d" not in flags_from_help((HELP / "2024-0.2.90-llama-bench.txt").read_text()).known


def test_the_pins_draft_backend_sampling_and_its_default_are_read_from_its_help():
    from specbench.builder.options import default_on

    pinned = flags_from_help((HELP / "pinned-llama-speculative-simple.txt").read_text()).options
    flag = pinned["backend_sampling_draft"]
    assert (flag.flag, flag.off, flag.default) == (
        "--spec-draft-backend-sampling", "--no-spec-draft-backend-sampling", "enabled"
    )  # fmt: skip
    assert default_on(flag) is True
    ik = flags_from_help((HELP / "ik-0.1.5-llama-speculative.txt").read_text()).options
    assert "backend_sampling_draft" not in ik and default_on(ik.get("backend_sampling_draft")) is None
    bench = flags_from_help((HELP / "pinned-llama-bench.txt").read_text())
    assert "-d" in bench.known  # the pin's llama-bench takes the KV depth (tune.calibrate)


def test_parse_help_joins_continuation_lines():
    entries = {e.names[0]: e for e in parse_help(HELP_2023_SPECULATIVE)}
    draft = entries["-md"]
    assert draft.names == ["-md", "--model-draft"] and draft.metavar == "FNAME"
    assert any("draft model for speculative decoding" in line for line in draft.description)
    removed = [e for e in parse_help(HELP_PINNED_EXCERPT) if e.removed]
    assert [e.names[0] for e in removed] == ["--draft", "--draft-min"]


# --- the real binaries ------------------------------------------------------------------------------


def _accepts(binary: str, *args: str) -> bool:
    """Does the binary parse these arguments? (`--version` after them exits before loading anything.)"""
    result = subprocess.run(
        [binary, *args, "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )
    return result.returncode == 0


@pytest.mark.slow
def test_probed_spellings_are_accepted_by_the_real_binary(llama_build):
    spec = llama_build.binary("speculative_simple")
    f = spec.flags
    assert f.draft_max and f.model_draft and f.ngld and f.p_min
    assert _accepts(spec.path, f.draft_max, "4")
    assert _accepts(spec.path, f.p_min, "0.5")
    assert _accepts(spec.path, f.ngld, "0")
    for value in f.spec_types:
        assert _accepts(spec.path, f.spec_type, value)
    assert not _accepts(spec.path, f.spec_type or "--spec-type", "no-such-type")
    completion = llama_build.binary("completion")
    assert completion.flags.no_display_prompt and _accepts(
        completion.path, completion.flags.no_display_prompt
    )
    assert Path(completion.path).name == completion.name
    if llama_build.commit == PINNED_COMMIT:
        assert f.draft_max == "--spec-draft-n-max"
        assert "draft-simple" in f.spec_types
        assert not _accepts(spec.path, "--draft-max", "4")  # removed in this commit: the probe skipped it
        assert PINNED_COMMIT[:7] in spec.version


@pytest.mark.slow
def test_server_spellings_of_the_real_binary(llama_build):
    """The server runner's options, probed from the built llama-server (older build.json files lack them)."""
    f = probe_binary("server", Path(llama_build.binary("server").path)).flags
    assert f.parallel and f.model_draft and f.spec_type
    if llama_build.commit == PINNED_COMMIT:
        assert (f.parallel, f.cache_ram, f.draft_max) == ("-np", "--cache-ram", "--spec-draft-n-max")
        assert "draft-simple" in f.spec_types

"""What llama.cpp refuses or ignores, decided by the plan (issue 43 items 2-4): refused combinations
left out with a note (all of them: a one-line error), ignored axes collapsed to one value, free
arguments checked against the probed --help, a program the self-test saw crash refused (issue 59).
Pure functions over cells, facts and flags; the real build's dry run is in tests/cli/test_run_feasible.py."""

from __future__ import annotations

from itertools import product

import pytest

from specbench.base.errors import ConfigError
from specbench.builder.buildinfo import BinaryInfo, FlagSpelling, SelfTest, TypeCheck
from specbench.builder.options import OptionFlag
from specbench.models.meta import SpecFacts
from specbench.plan.feasible import check_free_args, collapse_ignored, drop_conflicts
from specbench.plan.sweep import make_plan
from specbench.results.cell import Cell
from tests.helpers.sweeps import MODELS, make_config, rendered
from tests.helpers.trees import ik_build

NEW_FA = {"flash_attn": OptionFlag(flag="-fa", values=["on", "off", "auto"])}  # -fa on|off|auto
OLD_FA = {"flash_attn": OptionFlag(flag="-fa", takes_value=False)}  # an old on-only switch: off by default


def _spec(options=None, known=None) -> BinaryInfo:
    flags = FlagSpelling(options=options if options is not None else NEW_FA, known=known)
    return BinaryInfo(role="speculative_simple", name="llama-speculative-simple", path="/bin/x", flags=flags)


def _cells(**axes) -> list[Cell]:
    keys = list(axes)
    base = {"pair": "p", "model": "t", "draft": "d", "method": "draft", "draft_max": 8}
    return [Cell(**base, **dict(zip(keys, v, strict=True))) for v in product(*axes.values())]


def test_a_quantized_v_cache_without_flash_attention_is_left_out_with_llama_cpps_words():
    notes: list[str] = []
    kept = drop_conflicts(_cells(flash_attn=["off", "on"], cache_type_v=["f16", "q8_0"]), _spec(), notes)
    assert {(c.flash_attn, c.cache_type_v) for c in kept} == {("off", "f16"), ("on", "f16"), ("on", "q8_0")}
    assert (
        len(notes) == 1 and "left out 1 cell(s) with flash_attn=off and a quantized cache_type_v" in notes[0]
    )
    assert "quantized V cache requires flash_attn to be enabled" in notes[0]


def test_the_draft_cache_and_tensor_split_mode_are_the_same_class():
    notes: list[str] = []
    cells = _cells(flash_attn=["off"], cache_type_v_draft=["q4_0", "bf16"], split_mode=["layer", "tensor"])
    kept = drop_conflicts(cells, _spec(), notes)
    assert [(c.cache_type_v_draft, c.split_mode) for c in kept] == [("bf16", "layer")]
    assert len(notes) == 2 and any("SPLIT_MODE_TENSOR requires flash_attn" in n for n in notes)
    alone = Cell(model="d", cache_type_v_draft="q4_0", flash_attn="off")  # no draft model: no draft cache
    assert drop_conflicts([alone], _spec(), []) == [alone]


def test_unset_flash_attention_counts_as_off_only_where_the_build_defaults_to_off():
    cells = _cells(cache_type_v=["q8_0"])  # flash_attn not set
    assert drop_conflicts(cells, _spec(NEW_FA), []) == cells  # default auto: llama.cpp turns it on
    with pytest.raises(ConfigError) as exc:  # an old build: -fa is a switch, off unless given
        drop_conflicts(cells, _spec(OLD_FA), [])
    message = str(exc.value)
    assert message.startswith("every cell has flash_attn=off and a quantized cache_type_v, which llama.cpp")
    assert "flash_attn: on" in message and "\n" not in message


def test_n_cpu_moe_on_a_dense_model_collapses_to_its_first_value():
    cells = [Cell(pair="p", model="t", draft="d", method="draft", draft_max=g, n_cpu_moe=n)
             for g in (4, 8) for n in (0, 4)]  # fmt: skip
    notes: list[str] = []
    kept = collapse_ignored(cells, {"t": SpecFacts(experts=0), "d": SpecFacts()}, notes)
    assert [(c.draft_max, c.n_cpu_moe) for c in kept] == [(4, 0), (8, 0)]
    assert any("n_cpu_moe on t, a dense model (no MoE experts): llama.cpp ignores it; its values 0, 4 "
               "collapse to 0" in n for n in notes)  # fmt: skip
    assert any("2 cell(s) not planned" in n for n in notes)
    moe: list[str] = []
    assert collapse_ignored(cells, {"t": SpecFacts(experts=8)}, moe) == cells and not moe  # a MoE model
    assert collapse_ignored(cells, {}, []) == cells  # facts unknown (a dry run before the download): kept


def test_the_draft_models_axis_collapses_by_the_drafts_facts():
    cells = [Cell(pair="p", model="t", draft="d", method="draft", n_cpu_moe_draft=n) for n in (2, 6)]
    notes: list[str] = []
    kept = collapse_ignored(cells, {"t": SpecFacts(experts=8), "d": SpecFacts(experts=0)}, notes)
    assert [c.n_cpu_moe_draft for c in kept] == [2] and "n_cpu_moe_draft on d" in notes[0]
    single: list[str] = []
    collapse_ignored(cells[1:], {"d": SpecFacts()}, single)  # one value: said, nothing collapsed
    assert single == ["n_cpu_moe_draft on d, a dense model (no MoE experts): llama.cpp ignores it"]


KNOWN = ["--ctx-size", "--mlock-not", "--override-kv", "-c", "-lm", "--load-mode", "--temp", "-t"]


@pytest.mark.parametrize(
    ("args", "cure"),
    [
        (["--mlock"], "use the config key load_mode: mlock"),
        (["--ctx-sise", "512"], "did you mean --ctx-size?"),
        (["--frobnicate"], "remove it"),
        (["-lm", "mmap", "-ncmoe", "2"], "use the config key n_cpu_moe"),
    ],
)
def test_a_free_argument_the_binary_does_not_list_is_refused_in_one_line(args, cure):
    with pytest.raises(ConfigError) as exc:
        check_free_args(args, _spec(known=KNOWN), "args")
    message = str(exc.value)
    assert message.startswith("args: llama-speculative-simple of this build has no option ")
    assert cure in message and "\n" not in message


def test_values_negative_numbers_and_unprobed_builds_pass():
    check_free_args(
        ["--temp", "-1", "--ctx-size=512", "--override-kv", "a=int:1", "-"], _spec(known=KNOWN), "a"
    )
    check_free_args(["--anything"], _spec(known=None), "args")  # probed before option names were kept


@pytest.mark.parametrize("outcome", ["crashed", "ok"])
def test_a_program_the_self_test_saw_crash_with_a_draft_is_refused_before_anything_runs(tmp_path, outcome):
    """The fork's llama-speculative crashes whatever the options: recorded by the build's self-test,
    its draft cells are refused in one line naming the program, the crash and the server runner."""
    ik = ik_build(tmp_path)
    crash = TypeCheck(wtype="F32", outcome=outcome, **({"signal": "SIGSEGV", "reason": "killed by SIGSEGV"}
                                                       if outcome == "crashed" else {}))  # fmt: skip
    ik.selftest = SelfTest(fingerprint="x", machine="m", checked_at="t", speculative={"speculative": crash})
    config = make_config(tmp_path, repetitions=1, sweep={"method": ["draft"], "draft_max": [8]})
    if outcome == "ok":
        assert make_plan(config, ik, MODELS, rendered(config)).measured
        return
    with pytest.raises(ConfigError) as info:
        make_plan(config, ik, MODELS, rendered(config))
    message = str(info.value)
    assert message.startswith(
        "llama-speculative of this build crashed when its self-test ran it with a draft"
    )
    assert "killed by SIGSEGV" in message and "`runner: server`" in message and "\n" not in message
    server = make_config(
        tmp_path, repetitions=1, runner="server", sweep={"method": ["draft"], "draft_max": [8]}
    )
    assert make_plan(server, ik, MODELS, rendered(server)).measured  # its llama-server is another program

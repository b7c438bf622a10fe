"""llama.cpp options (flash_attn, cache types, MoE offload, ...) and free arguments: config keys,
sweep axes, their spelling per binary from the real build's --help, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.base.errors import ConfigError
from specbench.builder.options import OptionError, OptionFlag, bench_argv, option_argv
from specbench.plan.sweep import make_plan
from tests.helpers.sweeps import MODELS, make_config, rendered, with_flags


def _plan(tmp_path, build, runner="process", **sections):
    sections.setdefault("sweep", {"method": ["draft"], "draft_max": [4]})
    config = make_config(tmp_path, runner=runner, repetitions=1, **sections)
    return make_plan(config, build, MODELS, rendered(config))


@pytest.mark.parametrize("runner", ["process", "server"])
def test_swept_options_are_cells_and_every_command_line_has_them(tmp_path, llama_build, runner):
    sweep = {
        "method": ["draft"],
        "draft_max": [4],
        "flash_attn": ["off", "on"],
        "cache_type_k": ["f16", "q8_0"],
    }
    # the draft's V cache unquantized: a quantized one needs flash attention (plan.feasible leaves out
    # the flash_attn=off cells with one, as llama.cpp refuses them)
    plan = _plan(tmp_path, llama_build, runner, sweep=sweep, cache_type_v_draft="bf16")
    spec = [i for i in plan.measured if i.role == "speculative"]
    assert {(i.flash_attn, i.cache_type_k) for i in spec} == {
        (f, c) for f in ("off", "on") for c in ("f16", "q8_0")
    }
    for inv in plan.measured:
        argv = inv.argv
        assert argv[argv.index("-fa") + 1] == inv.flash_attn  # shared by the target and the draft
        # the target's K cache type; a draft alone runs with the draft's own (unset: llama.cpp's f16)
        assert argv[argv.index("-ctk") + 1] == inv.cache_type_k if inv.role != "draft" else "-ctk" not in argv
        # the draft's own cache type: on the speculative run, and as the draft-alone run's own -ctv
        if inv.role == "speculative":
            assert argv[argv.index("--spec-draft-type-v") + 1] == "bf16" and "-ctv" not in argv
        elif inv.role == "draft":
            assert argv[argv.index("-ctv") + 1] == "bf16"
        else:
            assert "-ctv" not in argv and "--spec-draft-type-v" not in argv
    # each speculative cell is measured against the baseline with its own target options
    baselines = {(i.flash_attn, i.cache_type_k) for i in plan.measured if i.role == "baseline"}
    assert len(baselines) == 4
    assert any("-fa on -ctk q8_0" in line for line in plan.describe())


def test_named_argument_sets_are_an_axis_labelled_by_name(tmp_path, llama_build):
    sets = [{"label": "ub64", "args": ["-ub", "64"]}, {"label": "ub256", "args": ["-ub", "256"]}]
    plan = _plan(tmp_path, llama_build, sweep={"method": ["draft"], "draft_max": [4], "args": sets},
                 args=["--no-op-offload"], llama_cpp={"args": ["--prio", "0"]})  # fmt: skip
    for inv in plan.measured:
        assert inv.args in ("ub64", "ub256")
        tail = inv.argv[-6:]
        assert tail == ["--prio", "0", "--no-op-offload", "-ub", inv.args[2:]] or tail[1:] == [
            "--prio", "0", "--no-op-offload", "-ub", inv.args[2:]
        ]  # fmt: skip


def test_a_pair_pins_an_option_and_says_so(tmp_path, llama_build):
    pairs = {"p": {"target": "big", "draft": "small", "flash_attn": "on"}}
    plan = _plan(tmp_path, llama_build, pairs=pairs, sweep={"method": ["draft"], "draft_max": [4],
                                                            "flash_attn": ["off", "on"]})  # fmt: skip
    assert {i.flash_attn for i in plan.measured} == {"on"}
    assert any("pairs.p.flash_attn pins flash_attn" in n for n in plan.notes)


@pytest.mark.parametrize(
    ("sections", "words"),
    [
        ({"flash_attn": "maybe"}, ["flash_attn", "on, off or auto", "maybe"]),
        ({"sweep": {"cache_type_k": ["q9_0"]}}, ["sweep.cache_type_k[0]", "unknown cache type", "q8_0"]),
        ({"args": ["-ub", 512]}, ["args[1]", "must be a string", "'512'"]),
        ({"args": ["-m", "x.gguf"]}, ["args[0]", "-m is set by specbench", "pairs.*.target"]),
        ({"args": ["--spec-draft-n-max=4"]}, ["--spec-draft-n-max", "sweep.draft_max"]),
        ({"flash_attn": "on", "args": ["-fa", "off"]}, ["-fa is also set by the key flash_attn"]),
        ({"flash_attn": "on", "sweep": {"flash_attn": ["off"]}}, ["set for the whole config and swept"]),
        ({"sweep": {"args": [{"label": "a", "args": ["--port", "1"]}]}}, ["sweep.args[0].args[0]", "--port"]),
    ],
)
def test_bad_option_input_is_one_line_naming_the_key(tmp_path, sections, words):
    with pytest.raises(ConfigError) as exc:
        make_config(tmp_path, **sections)
    message = str(exc.value)
    assert "\n" not in message and all(w in message for w in words), message


def test_a_build_without_the_option_is_refused_before_anything_runs(tmp_path, llama_build):
    flags = llama_build.binaries["speculative_simple"].flags.model_dump(exclude={"options"})
    old = with_flags(llama_build, "speculative_simple", **flags, options={})
    with pytest.raises(
        ConfigError, match=r"llama-speculative-simple of this build has no option for flash_attn"
    ):
        _plan(tmp_path, old, flash_attn="on")


def test_spellings_of_older_builds():
    old = {
        "flash_attn": {"flag": "-fa", "takes_value": False},
        "kv_offload": {"flag": "", "off": "-nkvo", "takes_value": False},
        "load_mode": {"flag": "", "takes_value": False, "old_load": ["--no-mmap", "--mlock"]},
    }

    spelling = {k: OptionFlag(**v) for k, v in old.items()}
    assert option_argv(spelling, "flash_attn", "on", "x") == ["-fa"]
    assert option_argv(spelling, "flash_attn", "off", "x") == []
    with pytest.raises(OptionError, match="switch"):
        option_argv(spelling, "flash_attn", "auto", "x")
    assert option_argv(spelling, "kv_offload", False, "x") == ["-nkvo"]
    assert option_argv(spelling, "kv_offload", True, "x") == []
    assert option_argv(spelling, "load_mode", "mmap+mlock", "x") == ["--mlock"]


def test_llama_bench_spells_them_its_own_way(llama_build):
    spelling = llama_build.binary("bench").flags.options
    values = {"flash_attn": "on", "cache_type_k": "q8_0", "kv_offload": False}
    values |= {"tensor_split": "3,1", "override_tensor": "a=CPU,b=CPU", "repack": True}
    argv = bench_argv(spelling, values)
    assert argv == [
        "-fa",
        "on",
        "-ctk",
        "q8_0",
        "-nkvo",
        "1",
        "-ts",
        "3/1",
        "-ot",
        "a=CPU;b=CPU",
        "--repack",
        "1",
    ]


def test_dense_models_collapse_n_cpu_moe_with_a_note(tmp_path, llama_build, smol_q4, smol_f32):
    data = {
        "models": {"t": {"path": str(smol_f32.path)}, "d": {"path": str(smol_q4.path)}},
        "pairs": {"p": {"target": "t", "draft": "d"}},
        "prompts": {"ids": ["code-02"]},
        "sweep": {"method": ["draft"], "draft_max": [4], "n_cpu_moe": [0, 4]},
        "repetitions": 1,
    }
    from specbench.plan.config import config_from_mapping

    config = config_from_mapping(data, Path(tmp_path), "t.yaml")
    plan = make_plan(config, llama_build, {"t": smol_f32, "d": smol_q4}, rendered(config))
    assert any("n_cpu_moe on t, a dense model" in n and "collapse to 0" in n for n in plan.notes)
    # llama.cpp ignores it here: 4 would measure the same cells again, so only 0 is planned
    assert {i.n_cpu_moe for i in plan.measured if i.role != "draft"} == {0}


def test_draft_options_without_a_draft_model_are_named_in_a_note(tmp_path, llama_build):
    sweep = {"method": ["ngram-simple"], "cache_type_k_draft": ["q8_0"]}
    plan = _plan(tmp_path, llama_build, sweep=sweep)
    assert any("cache_type_k_draft is for a draft model" in n for n in plan.notes)
    assert all("--spec-draft-type-k" not in i.argv for i in plan.measured)


def test_the_manifest_records_every_option_of_every_cell(tmp_path, llama_build):
    from specbench.results.cell import cell_record

    plan = _plan(
        tmp_path, llama_build, sweep={"method": ["draft"], "draft_max": [4], "flash_attn": ["off", "on"]}
    )
    records = {str(r): r for r in map(cell_record, plan.measured)}
    assert {(r["role"], r["flash_attn"]) for r in records.values()} == {
        (role, fa) for role in ("baseline", "speculative", "draft") for fa in ("off", "on")
    }


def test_a_new_option_is_one_entry_and_reaches_everything(tmp_path, llama_build):
    """A copy of the package with two more entries in base/llamaopts.py and nothing else.
    ``cpu_strict`` (llama.cpp's --cpu-strict, refused with flash attention off for the test's sake)
    is a described config key and sweep axis in the schema, spelled from the probed --help, a cell
    field with its own baselines, a report column, a flag free arguments may not repeat, a row of
    the docs table and a conflict the plan leaves out. ``p_split`` (--spec-draft-p-split), a draft
    axis, is a sweep list with its default, a cell field the draft method expands and an n-gram
    method leaves out, passed as the probed spelling, a reserved flag and a reason a run drafts
    nothing."""
    import shutil
    import subprocess
    import sys
    import textwrap

    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "specbench", tmp_path / "specbench", ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / "specbench" / "base" / "llamaopts.py"
    anchor = '    LlamaOption("poll",'
    entry = (
        '    LlamaOption("cpu_strict", ("--cpu-strict",), _ranged(0, 1), "0, 1", "Strict CPU placement.",\n'
        '                refuses=(Refusal("cpu_strict=1", "no strict CPU without FA", "cpu_strict 0",'
        " lambda v: v == 1),)),\n"
        '    LlamaOption("p_split", ("--spec-draft-p-split", "--draft-p-split"), Probability, "0-1",'
        ' "Split.", group="axis", sweep=(0.1,), scope="draft_context", cuts="splits drafts"),'
    )
    text = path.read_text()
    assert text.count(anchor) == 1
    path.write_text(text.replace(anchor, entry + "\n" + anchor, 1))
    spec = llama_build.binary("speculative_simple")
    comp = llama_build.binary("completion")
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from specbench.analysis.render import _OPTIONS
        from specbench.base.errors import ConfigError
        from specbench.base.llamaopts import options_table
        from specbench.builder.buildinfo import BuildInfo
        from specbench.builder.probe import probe_binary
        from specbench.plan.config import config_from_mapping
        from specbench.plan.prompts import render
        from specbench.plan.config import config_schema
        from specbench.plan.sweep import make_plan
        from specbench.execute.judge import never_drafted_reason
        from specbench.parse.process import ParsedLog
        from specbench.plan.options import RESERVED
        from specbench.results.cell import BASELINE_FIELDS, Cell

        build = BuildInfo.load(Path({str(Path(spec.path).parents[1] / "build.json")!r}))
        build.binaries["speculative_simple"] = probe_binary("speculative_simple", Path({spec.path!r}))
        build.binaries["completion"] = probe_binary("completion", Path({comp.path!r}))
        for p in ("t", "d"):
            Path(p + ".gguf").write_bytes(b"GGUF")
        data = {{
            "models": {{"t": {{"path": "t.gguf"}}, "d": {{"path": "d.gguf"}}}},
            "pairs": {{"p": {{"target": "t", "draft": "d"}}}}, "prompts": {{"ids": ["code-02"]}},
            "sweep": {{"method": ["draft"], "draft_max": [4], "cpu_strict": [0, 1]}}, "repetitions": 1,
        }}
        config = config_from_mapping(data, Path("."), "t.yaml")
        assert type(config.sweep).model_fields["cpu_strict"].description
        assert "cpu_strict" in str(config_schema())
        prompts = [render(p, "t", None) for p in config.prompt_list()]
        plan = make_plan(config, build, {{"t": Path("/absent/t.gguf"), "d": Path("/absent/d.gguf")}}, prompts)
        spec = [i for i in plan.measured if i.role == "speculative"]
        assert sorted(i.cpu_strict for i in spec) == [0, 1]
        for i in plan.measured:
            assert i.argv[i.argv.index("--cpu-strict") + 1] == str(i.cpu_strict)
        assert sorted(i.cpu_strict for i in plan.measured if i.role == "baseline") == [0, 1]
        assert "cpu_strict" in Cell.model_fields and "cpu_strict" in BASELINE_FIELDS
        assert "cpu_strict" in _OPTIONS and "`--cpu-strict`" in options_table()
        data["sweep"]["args"] = [{{"label": "a", "args": ["--cpu-strict", "1"]}}]
        try:
            config_from_mapping(data, Path("."), "t.yaml")
        except ConfigError as exc:
            assert "also set by the key cpu_strict" in str(exc), exc
        else:
            raise AssertionError("--cpu-strict in args beside the key was taken")
        del data["sweep"]["args"]
        data["sweep"]["flash_attn"] = ["off"]
        plan = make_plan(config_from_mapping(data, Path("."), "t.yaml"), build,
                         {{"t": Path("/absent/t.gguf"), "d": Path("/absent/d.gguf")}}, prompts)
        assert {{i.cpu_strict for i in plan.measured}} == {{0}}
        assert any("cpu_strict=1" in n and "no strict CPU without FA" in n for n in plan.notes), plan.notes
        # the draft axis
        data["sweep"] = {{"method": ["draft", "ngram-simple"], "draft_max": [4], "p_split": [0.1, 0.3]}}
        config = config_from_mapping(data, Path("."), "t.yaml")
        assert type(config.sweep)().p_split == [0.1] and "p_split" in str(config_schema())
        assert RESERVED["--draft-p-split"] == "sweep.p_split"
        plan = make_plan(config, build, {{"t": Path("/absent/t.gguf"), "d": Path("/absent/d.gguf")}}, prompts)
        spec = [i for i in plan.measured if i.role == "speculative"]
        assert sorted((i.method, i.p_split) for i in spec) == [
            ("draft", 0.1), ("draft", 0.3), ("ngram-simple", None)], spec
        for i in spec:
            assert ("--spec-draft-p-split" in i.argv) == (i.method == "draft")
            if i.p_split:
                assert i.argv[i.argv.index("--spec-draft-p-split") + 1] == f"{{i.p_split:g}}"
        assert "p_split" in Cell.model_fields and "p_split" not in BASELINE_FIELDS
        wide = next(i for i in spec if i.p_split == 0.3)
        assert "p_split=0.3 splits drafts" in never_drafted_reason(wide, ParsedLog(kind="speculative"))
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


def test_ngram_mod_sizes_are_axes_of_ngram_mod_alone(tmp_path, llama_build):
    """ngram-mod's sizes (--spec-ngram-mod-n-min/-max/-match) are keys and axes: each value a cell
    of ngram-mod, passed on its command line; another method ignores them, so they collapse there,
    and no baseline carries them (a baseline does not speculate)."""
    sweep = {"method": ["ngram-mod", "draft"], "draft_max": [4], "ngram_mod_n_max": [32, 64]}
    plan = _plan(tmp_path, llama_build, sweep=sweep, ngram_mod_n_min=8, ngram_mod_n_match=16)
    spec = [i for i in plan.measured if i.role == "speculative"]
    assert {(i.method, i.ngram_mod_n_max) for i in spec} == {
        ("ngram-mod", 32),
        ("ngram-mod", 64),
        ("draft", None),
    }
    assert (
        len({i.sample_key() for i in spec if i.method == "draft"})
        == len({i.sample_key() for i in spec if i.method == "ngram-mod"}) / 2
    )
    for i in spec:
        if i.method == "ngram-mod":
            argv = i.argv
            assert argv[argv.index("--spec-ngram-mod-n-max") + 1] == str(i.ngram_mod_n_max)
            assert argv[argv.index("--spec-ngram-mod-n-min") + 1] == "8"
            assert argv[argv.index("--spec-ngram-mod-n-match") + 1] == "16"
        else:
            assert not any(a.startswith("--spec-ngram-mod") for a in i.argv)
    assert all(i.ngram_mod_n_max is None for i in plan.measured if i.role != "speculative")


def test_the_draft_thread_count_is_an_axis_of_draft_cells(tmp_path, llama_build):
    plan = _plan(
        tmp_path, llama_build, sweep={"method": ["draft"], "draft_max": [4], "threads_draft": [1, 2]}
    )
    spec = [i for i in plan.measured if i.role == "speculative"]
    assert {i.threads_draft for i in spec} == {1, 2}
    for i in spec:
        assert i.argv[i.argv.index("--spec-draft-threads") + 1] == str(i.threads_draft)
    assert {i.threads_draft for i in plan.measured if i.role != "speculative"} == {None}


def test_prio_is_an_axis_passed_to_every_binary(tmp_path, llama_build):
    """``prio``: each value is a cell of its own and every command line carries it."""
    plan = _plan(tmp_path, llama_build, sweep={"method": ["draft"], "draft_max": [4], "prio": [0, 1]})
    assert {(i.role, i.prio) for i in plan.measured} == {
        (role, p) for role in ("baseline", "speculative", "draft") for p in (0, 1)
    }
    for i in plan.measured:
        assert i.argv[i.argv.index("--prio") + 1] == str(i.prio)

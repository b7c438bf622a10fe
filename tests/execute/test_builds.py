"""Several builds in one run: all are made before anything is measured, so one that fails to compile
stops the run in one line (its label and the compiler's first error) and the other is never
measured alone. Tiny fake trees: seconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.build import assert_one_line_error, cli, fake_llama_tree
from tests.helpers.builds import FAKE_MAIN

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "ci.yaml"


def test_a_build_that_fails_to_compile_stops_the_run_before_any_sample(tmp_path):
    good = fake_llama_tree(tmp_path / "good", FAKE_MAIN)
    broken = fake_llama_tree(tmp_path / "broken", "int main() { return first_bad_name + second_bad_name; }\n")
    builds = (
        f"[{{label: base, backend: cpu, source: {good}}}, {{label: head, backend: cpu, source: {broken}}}]"
    )
    out = tmp_path / "run"
    result = cli(
        "run", str(CONFIG), "--set", f"llama_cpp={builds}", "--out", str(out),
        env={"SPECBENCH_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    last = assert_one_line_error(result, "build 'head'", "compiling llama.cpp failed", "first_bad_name")
    assert "second_bad_name" not in last  # the first error names the cause
    assert not out.exists()  # nothing measured, no run folder left behind
    assert (tmp_path / "home" / "builds").is_dir()  # base was built (and stays cached) first


def test_identical_labels_are_refused_before_building(tmp_path):
    builds = "[{label: same, backend: cpu}, {label: same, backend: cpu}]"
    result = cli(
        "run", str(CONFIG), "--set", f"llama_cpp={builds}", "--out", str(tmp_path / "run"),
        env={"SPECBENCH_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert_one_line_error(result, "llama_cpp", "both labelled 'same'")
    assert not (tmp_path / "home").exists() and not (tmp_path / "run").exists()


def test_resume_refuses_a_build_whose_ref_moved(tmp_path, llama_build):
    from specbench.base.errors import RunError
    from specbench.execute.benchmark import check_same_builds

    moved = llama_build.model_copy(update={"key": "ffffffffffff-cpu-0000000000", "commit": "f" * 40})
    check_same_builds({"a": llama_build, "b": llama_build}, {"a": llama_build, "b": llama_build}, tmp_path)
    with pytest.raises(RunError, match=r"build 'b' was 0c1e57098bba and is ffffffffffff now"):
        check_same_builds({"a": llama_build, "b": llama_build}, {"a": llama_build, "b": moved}, tmp_path)

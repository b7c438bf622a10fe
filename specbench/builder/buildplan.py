"""What a build request means before anything is built: the cmake arguments, the cache key, the
cached build if there is one.

Builds live in ``SPECBENCH_HOME/builds/<key>/`` (binaries in ``bin/``, ``build.json``, ``build.log``);
the key hashes everything that changes the binaries (source, backend, arguments, host, CPU flags),
so two requests that mean the same build share one.
"""

from __future__ import annotations

import hashlib
import platform
import re
import shutil
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from specbench.base import paths
from specbench.base.errors import BuildError
from specbench.base.formats import json_text
from specbench.builder import toolkit
from specbench.builder.buildinfo import BuildInfo
from specbench.builder.gitref import GitRef, resolve_ref, short_ref
from specbench.builder.probe import PROBE_VERSION, PROBED_OPTIONS, probe_binary, probe_is_current
from specbench.builder.source import SourceTree, is_llama_tree, resolve_source
from specbench.builder.workarea import commit_defines
from specbench.machine import envinfo

BACKENDS = ("auto", "cpu", "cuda", "metal")
RELEASE_TYPES = {"Release", "RelWithDebInfo", "MinSizeRel"}
BUILD_JSON = "build.json"
BUILD_LOG = "build.log"
# Always: optimised, no libcurl (models come from specbench), no llama.cpp tests, self-contained
# binaries, and no web-UI download from the Hugging Face Hub while building llama-server.
BASE_ARGS = {
    "CMAKE_BUILD_TYPE": "Release",
    "LLAMA_CURL": "OFF",
    "LLAMA_BUILD_TESTS": "OFF",
    "BUILD_SHARED_LIBS": "OFF",
    "LLAMA_USE_PREBUILT_UI": "OFF",
}
# The option that turns a backend on, newest name first (2024: LLAMA_CUBLAS -> LLAMA_CUDA -> GGML_CUDA).
SWITCH_NAMES = {"cuda": ["GGML_CUDA", "LLAMA_CUDA", "LLAMA_CUBLAS"], "metal": ["GGML_METAL", "LLAMA_METAL"]}
_GPU_SWITCHES = {name: backend for backend, names in SWITCH_NAMES.items() for name in names}
# Trees specbench owns are copied into the shared work area (see specbench.builder.workarea).
EXPORTED_ORIGINS = {"sdist", "marker", "submodule"}
_DEFINE = re.compile(r"^-D([A-Za-z_][A-Za-z0-9_]*)(?::[A-Za-z]+)?=(.*)$")


def cuda_arch(compute_cap: str) -> str:
    """``nvidia-smi`` compute capability to a CMake CUDA architecture: ``8.9`` -> ``89``."""
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", compute_cap)
    if not m:
        raise BuildError(
            f"unexpected GPU compute capability {compute_cap!r}; pass --cmake-arg "
            "-DCMAKE_CUDA_ARCHITECTURES=NN"
        )
    return f"{int(m.group(1))}{int(m.group(2))}"


def configure_args(
    backend: str,
    extra: Sequence[str] = (),
    compute_caps: Sequence[str] = (),
    build_commit: str | None = None,
    switch: str | None = None,
) -> list[str]:
    """The ``-D`` arguments for one build (pure). ``extra`` (``--cmake-arg``) overrides a default of the
    same name; ``build_commit`` names the commit in ``--version`` for trees that are no git checkout;
    ``switch`` is an older tree's name for the backend option (``backend_switch``)."""
    defines = dict(BASE_ARGS)
    if backend != "cpu":
        defines[switch or SWITCH_NAMES[backend][0]] = "ON"
    if backend == "cuda" and compute_caps:
        defines["CMAKE_CUDA_ARCHITECTURES"] = ";".join(sorted({cuda_arch(c) for c in compute_caps}, key=int))
    elif backend == "cuda":
        defines["GGML_NATIVE"] = "OFF"  # no GPU here: llama.cpp's portable architecture list, not "native"
    if build_commit:
        defines.update(commit_defines(build_commit))
    passthrough: list[str] = []
    for arg in extra:
        m = _DEFINE.match(arg)
        if m is None:
            if arg.startswith(("-G", "-S", "-B")):
                raise BuildError(f"--cmake-arg {arg} is chosen by specbench; pass only -DNAME=VALUE options")
            passthrough.append(arg)
            continue
        name, value = m.group(1), m.group(2)
        if name == "CMAKE_BUILD_TYPE" and value not in RELEASE_TYPES:
            raise BuildError(
                f"refusing a {value or 'empty'} build type: benchmarks need optimised code; "
                f"drop --cmake-arg {arg}"
            )
        if name.startswith("LLAMA_SANITIZE_") and value.upper() in {"ON", "1", "TRUE", "YES"}:
            raise BuildError(
                f"refusing a sanitizer build ({arg}): it distorts every timing; drop that --cmake-arg"
            )
        wanted = _GPU_SWITCHES.get(name)
        if wanted and wanted != backend and value.upper() in {"ON", "1", "TRUE", "YES"}:
            raise BuildError(f"--cmake-arg {arg} contradicts --backend {backend}; use --backend {wanted}")
        defines[name] = value
    return [f"-D{k}={v}" for k, v in defines.items()] + passthrough


def backend_switch(tree: Path, backend: str) -> str | None:
    """The backend option this tree's CMake files define (None for CPU or when none is found)."""
    if backend == "cpu":
        return None
    text = ""
    for cmake_file in (tree / "CMakeLists.txt", tree / "ggml" / "CMakeLists.txt"):
        with suppress(OSError):
            text += cmake_file.read_text(errors="replace")
    return next((name for name in SWITCH_NAMES[backend] if re.search(rf"\b{name}\b", text)), None)


def is_native(args: Sequence[str]) -> bool:
    """llama.cpp compiles for the CPU it is built on (``-march=native``) unless GGML_NATIVE is off."""
    for arg in args:
        name, _, value = arg.partition("=")
        if name in ("-DGGML_NATIVE", "-DGGML_NATIVE:BOOL") and value.upper() in {"OFF", "0", "FALSE", "NO"}:
            return False
    return True


def build_key(tree_ident: str, backend: str, args: Sequence[str], isa: Sequence[str] | None = None) -> str:
    """Cache folder name: readable commit prefix, backend, and a hash of everything that matters. A native
    build also keys on the CPU's instruction sets (``isa``), so a cache shared by machines never hands one
    CPU's binary to another (SIGILL)."""
    fields: dict[str, object] = {
        "source": tree_ident,
        "backend": backend,
        "args": list(args),
        "host": [platform.system(), platform.machine()],
    }
    if is_native(args):
        fields["isa"] = list(envinfo.cpu_isa() if isa is None else isa)
    payload = json_text(fields, None, sort_keys=True)
    digest = hashlib.sha256(payload.encode()).hexdigest()[:10]
    # a marker file's commit is any text: only its letters and digits name the folder
    head = re.sub(r"[^A-Za-z0-9]", "_", tree_ident[:12]) if not tree_ident.startswith("tree-") else "tree"
    if "-dirty-" in tree_ident:
        head += "-dirty"
    return f"{head}-{backend}-{digest}"


def resolve_backend(backend: str) -> tuple[str, list[str]]:
    """(concrete backend, GPU compute capabilities to target)."""
    if backend not in BACKENDS:
        raise BuildError(f"unknown backend {backend!r}; use one of: {', '.join(BACKENDS)}")
    gpus = envinfo.nvidia_gpus() if backend in {"auto", "cuda"} and shutil.which("nvidia-smi") else []
    if backend == "auto":
        backend = toolkit.detect_backend(gpus)
    caps = [g.compute_cap for g in gpus if g.compute_cap] if backend == "cuda" else []
    return backend, caps


def load_cached(info_path: Path) -> BuildInfo | None:
    """The cached build, its flags re-read from --help (seconds, not a rebuild) when an older
    specbench probed them before it knew options it now passes."""
    if not info_path.is_file():
        return None
    info = BuildInfo.load(info_path)
    if not all(Path(b.path).is_file() for b in info.binaries.values()):
        return None
    if not probe_is_current(info):  # a new option key re-probes too: adding one needs no version bump
        info.binaries = {
            role: probe_binary(role, Path(b.path), b.command) for role, b in info.binaries.items()
        }
        info.probe_version, info.probed_options = PROBE_VERSION, list(PROBED_OPTIONS)
        with suppress(OSError):  # a read-only cache still serves this run with the fresh flags
            info.save(info_path)
    return info


def build_dir_for(key: str) -> Path:
    return paths.inside(paths.builds_dir(), key)


@dataclass(frozen=True)
class BuildPlan:
    """Which build a request means (tree, concrete backend, cmake arguments, cache key), before building."""

    tree: SourceTree
    backend: str
    args: list[str]
    key: str
    ref: GitRef | None = None  # a commit of a git checkout, exported (never the user's work tree)

    @property
    def build_dir(self) -> Path:
        return build_dir_for(self.key)

    @property
    def cached(self) -> bool:
        return (self.build_dir / BUILD_JSON).is_file()

    @property
    def exported(self) -> bool:
        """Built from a copy in the shared work area (a ref, or a tree specbench owns), not in place."""
        return self.ref is not None or self.tree.origin in EXPORTED_ORIGINS

    @property
    def describe(self) -> str:
        """``/src/llama.cpp@main (1a2b3c4d5e)`` or the tree and what identifies it."""
        if self.ref is not None:
            return f"{self.tree.path}@{short_ref(self.ref)}"
        return f"{self.tree.path} ({self.tree.ident[:19]})"


def plan_build(
    backend: str = "auto",
    source: Path | str | None = None,
    cmake_args: Sequence[str] = (),
    report: Callable[[str], None] | None = None,
    ref: str | None = None,
) -> BuildPlan:
    """Resolve a build request to its cache key; ``--dry-run`` shows this, ``ensure_build`` builds it.
    With ``ref`` the tree is that commit of the git checkout ``source``, keyed by the commit."""
    concrete, caps = resolve_backend(backend)
    git_ref = None
    if ref is not None:
        git_ref = resolve_ref(source if source is not None else resolve_source(None, report).path, ref)
        tree = SourceTree(git_ref.source, git_ref.commit, git_ref.commit, "git-ref")
        if not is_llama_tree(git_ref.source):
            raise BuildError(
                f"{git_ref.source} is not a llama.cpp tree (no CMakeLists.txt with ggml/ or llama.h); "
                f"point `source` at the root folder of a llama.cpp checkout"
            )
    else:
        tree = resolve_source(source, report)
    exported = git_ref is not None or tree.origin in EXPORTED_ORIGINS
    build_commit = tree.commit if tree.commit and exported else None
    args = configure_args(concrete, cmake_args, caps, build_commit, backend_switch(tree.path, concrete))
    return BuildPlan(tree, concrete, args, build_key(tree.ident, concrete, args), git_ref)

"""Configure and build llama.cpp with CMake, once per (source commit, backend, cmake arguments).

Builds live in ``SPECBENCH_HOME/builds/<key>/`` (binaries in ``bin/``, ``build.json``, ``build.log``).
``build.json`` is written last, so its presence means a complete build: a second identical
``ensure_build`` only reads it and never runs cmake.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from specbench.base import paths
from specbench.base.errors import BuildError
from specbench.builder import cmake, envinfo, selftest, workarea
from specbench.builder.buildinfo import ROLE_NAMES, BinaryInfo, BuildInfo
from specbench.builder.cmake import BuildProgress, ProgressFn
from specbench.builder.gitref import GitRef, commit_entries, resolve_ref, short_ref
from specbench.builder.probe import PROBE_VERSION, probe_binary
from specbench.builder.source import SourceTree, is_llama_tree, resolve_source

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
BACKEND_ARGS = {"cpu": {}, "cuda": {"GGML_CUDA": "ON"}, "metal": {"GGML_METAL": "ON"}}
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
            f"-DCMAKE_CUDA_ARCHITECTURES=NN"
        )
    return f"{int(m.group(1))}{int(m.group(2))}"


def configure_args(
    backend: str,
    extra: Sequence[str] = (),
    compute_caps: Sequence[str] = (),
    build_commit: str | None = None,
    switch: str | None = None,
) -> list[str]:
    """The ``-D`` arguments for one build. Pure: the same inputs always give the same list.

    ``extra`` (the user's ``--cmake-arg``) overrides any default with the same name; CUDA builds
    target the architectures of the GPUs found (``compute_caps``) unless one is given.
    ``build_commit`` names the commit in ``--version`` for trees that are not git checkouts;
    ``switch`` is the tree's name for the backend option when older than ``GGML_*`` (see backend_switch).
    """
    if backend not in BACKEND_ARGS:
        raise BuildError(f"unknown backend {backend!r}; use one of: {', '.join(BACKENDS)}")
    defines: dict[str, str] = {**BASE_ARGS, **BACKEND_ARGS[backend]}
    if switch and backend != "cpu":
        defines = {**BASE_ARGS, switch: "ON"}
    if backend == "cuda" and compute_caps:
        defines["CMAKE_CUDA_ARCHITECTURES"] = ";".join(sorted({cuda_arch(c) for c in compute_caps}, key=int))
    elif backend == "cuda":
        defines["GGML_NATIVE"] = "OFF"  # no GPU here: llama.cpp's portable architecture list, not "native"
    if build_commit:
        defines["LLAMA_BUILD_COMMIT"] = build_commit[:7]
        defines["LLAMA_BUILD_NUMBER"] = "0"
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
        try:
            text += cmake_file.read_text(errors="replace")
        except OSError:
            pass
    return next((name for name in SWITCH_NAMES[backend] if re.search(rf"\b{name}\b", text)), None)


def is_native(args: Sequence[str]) -> bool:
    """llama.cpp compiles for the CPU it is built on (``-march=native``) unless GGML_NATIVE is off."""
    for arg in args:
        name, _, value = arg.partition("=")
        if name in ("-DGGML_NATIVE", "-DGGML_NATIVE:BOOL") and value.upper() in {"OFF", "0", "FALSE", "NO"}:
            return False
    return True


def build_key(tree_ident: str, backend: str, args: Sequence[str], isa: Sequence[str] | None = None) -> str:
    """Cache folder name: readable commit prefix, backend, and a hash of everything that matters.

    A native build also keys on the CPU's instruction-set flags (``isa``, default: this CPU's), so a
    cache shared by machines (a cluster's home folder) never hands one CPU's binary to another (SIGILL).
    """
    fields: dict[str, object] = {
        "source": tree_ident,
        "backend": backend,
        "args": list(args),
        "host": [platform.system(), platform.machine()],
    }
    if is_native(args):
        fields["isa"] = list(envinfo.cpu_isa() if isa is None else isa)
    payload = json.dumps(fields, sort_keys=True)
    digest = hashlib.sha256(payload.encode()).hexdigest()[:10]
    head = tree_ident[:12] if not tree_ident.startswith("tree-") else "tree"
    if "-dirty-" in tree_ident:
        head += "-dirty"
    return f"{head}-{backend}-{digest}"


def resolve_backend(backend: str) -> tuple[str, list[str]]:
    """(concrete backend, GPU compute capabilities to target)."""
    if backend not in BACKENDS:
        raise BuildError(f"unknown backend {backend!r}; use one of: {', '.join(BACKENDS)}")
    gpus = envinfo.nvidia_gpus() if backend in {"auto", "cuda"} and shutil.which("nvidia-smi") else []
    if backend == "auto":
        backend = envinfo.detect_backend(gpus)
    caps = [g.compute_cap for g in gpus if g.compute_cap] if backend == "cuda" else []
    return backend, caps


def check_tools() -> None:
    """cmake and C/C++ compilers must be on PATH before anything is configured."""
    if shutil.which("cmake") is None:
        raise BuildError(
            "cmake not found on PATH; install it (apt install cmake, brew install cmake "
            "or pip install cmake) and run again"
        )
    cxx = os.environ.get("CXX", "").split()
    cc = os.environ.get("CC", "").split()
    if not (shutil.which(cxx[0]) if cxx else any(shutil.which(c) for c in ("c++", "g++", "clang++"))):
        raise BuildError(
            "no C++ compiler found (c++, g++ or clang++ on PATH, or $CXX); install one "
            "(apt install build-essential, or xcode-select --install on macOS)"
        )
    if not (shutil.which(cc[0]) if cc else any(shutil.which(c) for c in ("cc", "gcc", "clang"))):
        raise BuildError(
            "no C compiler found (cc, gcc or clang on PATH, or $CC); install one "
            "(apt install build-essential, or xcode-select --install on macOS)"
        )


def choose_targets(available: set[str]) -> dict[str, str]:
    """The binary each role uses in this tree: the newest name that exists (see ROLE_NAMES)."""
    chosen = {}
    for role, names in ROLE_NAMES.items():
        name = next((n for n in names if n in available), None)
        if name:
            chosen[role] = name
    return chosen


def _cached(info_path: Path) -> BuildInfo | None:
    """The cached build, its flags re-read from --help (seconds, not a rebuild) when an older
    specbench probed them before it knew options it now passes."""
    if not info_path.is_file():
        return None
    info = BuildInfo.load(info_path)
    if not all(Path(b.path).is_file() for b in info.binaries.values()):
        return None
    if info.probe_version < PROBE_VERSION:
        info.binaries = {role: probe_binary(role, Path(b.path)) for role, b in info.binaries.items()}
        info.probe_version = PROBE_VERSION
        try:
            info.save(info_path)
        except OSError:
            pass  # a read-only cache still serves this run with the fresh flags
    return info


def build_dir_for(key: str) -> Path:
    return paths.builds_dir() / key


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

    With ``ref`` the tree is that commit of the git checkout ``source`` (default: the pinned tree,
    which is no git checkout, so a ref needs a source), and the key is the commit's.
    """
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


def ensure_build(
    backend: str = "auto",
    source: Path | str | None = None,
    jobs: int | None = None,
    cmake_args: Sequence[str] = (),
    force: bool = False,
    progress: ProgressFn | None = None,
    ref: str | None = None,
) -> BuildInfo:
    """The BuildInfo of llama.cpp built for this machine; builds it only when not cached (or ``force``).

    ``source`` + ``ref``: that commit of a git checkout, exported into the work area (the user's
    work tree and index are never touched); cached by commit, backend and cmake arguments.
    """
    report = (lambda msg: progress(BuildProgress("source", msg))) if progress else None
    plan = plan_build(backend, source, cmake_args, report, ref)
    info_path = plan.build_dir / BUILD_JSON
    if not force and (info := _cached(info_path)) is not None:
        return _as_asked(checked(info, info_path, progress), plan)
    paths.builds_dir().mkdir(parents=True, exist_ok=True)
    with _locked(plan.build_dir, f"another specbench process is building {plan.key}; waiting", progress):
        if not force and (info := _cached(info_path)) is not None:
            return _as_asked(checked(info, info_path, progress), plan)  # built by another process meanwhile
        return checked(_build(plan, jobs, force, progress), info_path, progress)


def checked(info: BuildInfo, info_path: Path, progress: ProgressFn | None = None) -> BuildInfo:
    """``info`` with a self-test made on this machine: after a build, and the first time a cached
    build is used where the CPU or GPUs differ from where it was checked (seconds; saved in build.json)."""
    if not selftest.needs_selftest(info):
        return info
    say = (lambda msg: progress(BuildProgress("selftest", msg))) if progress else None
    if say:
        say(f"decoding a few tokens of {', '.join(selftest.WEIGHT_TYPES)} on this machine")
    info.selftest = selftest.run_selftest(info, say)
    try:
        info.save(info_path)
    except OSError:
        pass  # a read-only cache: this process still runs with the fresh record
    return info


def _as_asked(info: BuildInfo, plan: BuildPlan) -> BuildInfo:
    """A cached build as this caller named it: one commit built once serves ``main~1`` and its sha
    alike, and each caller's record keeps the ref it gave (``commit`` is the full sha either way)."""
    ref = plan.ref.ref if plan.ref is not None else None
    return info if info.ref == ref else info.model_copy(update={"ref": ref})


@contextmanager
def _locked(path: Path, waiting: str, progress: ProgressFn | None) -> Iterator[None]:
    lock = FileLock(str(path) + ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if progress:
            progress(BuildProgress("wait", waiting))
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _build(plan: BuildPlan, jobs: int | None, force: bool, progress: ProgressFn | None) -> BuildInfo:
    check_tools()
    tree = None if plan.exported else plan.tree.path
    area = workarea.work_dir() / workarea.area_key(plan.backend, plan.args, tree)
    area.parent.mkdir(parents=True, exist_ok=True)
    with _locked(area, f"another build is using {area}; waiting", progress):
        try:
            return _build_in(plan, area, jobs, force, progress)
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: the CLI prints what was kept
            exc.kept = (  # type: ignore[attr-defined]
                f"nothing cached; the next `specbench build` goes on from the objects compiled in {area}"
            )
            raise


def _build_in(
    plan: BuildPlan, area: Path, jobs: int | None, force: bool, progress: ProgressFn | None
) -> BuildInfo:
    tree, backend, args, key, bdir = plan.tree, plan.backend, plan.args, plan.key, plan.build_dir
    started = time.monotonic()
    gen = cmake.generator()
    wbuild = area / "build"
    if force and wbuild.exists():
        shutil.rmtree(wbuild)
    cache = wbuild / "CMakeCache.txt"
    if cache.is_file() and ("CMAKE_GENERATOR:INTERNAL=Ninja" in cache.read_text(errors="replace")) != bool(
        gen
    ):
        shutil.rmtree(wbuild)  # configured with another generator; cmake refuses to switch in place
    wbuild.mkdir(parents=True, exist_ok=True)
    bdir.mkdir(parents=True, exist_ok=True)
    (bdir / BUILD_JSON).unlink(missing_ok=True)
    log = bdir / BUILD_LOG
    log.write_text(f"# specbench build {key} of {plan.describe} ({tree.origin}) in {area}\n")

    def note(phase: str, msg: str) -> None:
        if progress:
            progress(BuildProgress(phase, msg))

    src = tree.path
    if plan.exported:
        src = area / "src"
        note("source", f"exporting {plan.describe} into {src}")
        entries = commit_entries(plan.ref) if plan.ref is not None else workarea.dir_entries(tree.path)
        synced = workarea.sync_tree(entries, src)
        note("source", f"{synced.written} files written, {synced.removed} removed, {synced.unchanged} kept")
    env = workarea.build_env()
    note("configure", f"configuring {plan.describe} ({backend})")
    cmake_exe = shutil.which("cmake") or "cmake"
    cmake.request_codemodel(wbuild)
    configure = [cmake_exe, "-S", str(src), "-B", str(wbuild), *gen, *args]
    if cmake.stream_step(configure, log, progress, "configure", env) != 0:
        raise cmake.compile_failure("configuring llama.cpp with cmake", log)
    executables = cmake.executable_targets(wbuild)
    roles = choose_targets(set(executables))
    if "completion" not in roles and "speculative" not in roles:
        raise BuildError(
            f"{tree.path} defines none of the llama.cpp programs specbench runs "
            f"({', '.join(ROLE_NAMES['completion'] + ROLE_NAMES['speculative'])}); "
            f"is it a llama.cpp tree?"
        )
    targets = sorted(set(roles.values()))
    note("build", f"building {', '.join(targets)}")
    cmd = [cmake_exe, "--build", str(wbuild), "--config", "Release", "-j", str(jobs or os.cpu_count() or 2)]
    steps: list[int] = []

    def count(p: BuildProgress) -> None:
        if p.phase == "build" and p.total is not None:
            steps.append(p.total)
        if progress:
            progress(p)

    if cmake.stream_step([*cmd, "--target", *targets], log, count, "build", env) != 0:
        raise cmake.compile_failure("compiling llama.cpp", log)
    built: dict[str, Path] = {}
    for name in targets:
        path = cmake.find_binary(wbuild, name, executables.get(name))
        if path is None:
            raise BuildError(f"the build made no {name} binary; see {log}")
        built[name] = path
    copied = workarea.copy_binaries(built, bdir / "bin")
    binaries: dict[str, BinaryInfo] = {}
    for role, name in roles.items():
        note("probe", f"probing {name} --help")
        binaries[role] = probe_binary(role, copied[name])
    info = BuildInfo(
        key=key,
        source=str(tree.path),
        commit=tree.commit,
        ref=plan.ref.ref if plan.ref is not None else None,
        backend=backend,
        cmake_args=args,
        compiler=cmake.compiler_version(wbuild),
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
        bin_dir=str(bdir / "bin"),
        binaries=binaries,
        probe_version=PROBE_VERSION,
        origin=tree.origin,
        log=str(log),
        build_s=round(time.monotonic() - started, 1),
        build_steps=steps[-1] if steps else 0,
        work_area=str(area),
        ccache=workarea.find_ccache(),
    )
    info.save(bdir / BUILD_JSON)
    return info

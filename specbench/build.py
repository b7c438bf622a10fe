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
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from specbench import envinfo, paths
from specbench.buildinfo import ROLE_NAMES, BinaryInfo, BuildInfo
from specbench.errors import BuildError
from specbench.probe import probe_binary
from specbench.source import SourceTree, resolve_source

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
_DEFINE = re.compile(r"^-D([A-Za-z_][A-Za-z0-9_]*)(?::[A-Za-z]+)?=(.*)$")
_NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]")
_MAKE_STEP = re.compile(r"^\[\s*(\d+)%\]")


@dataclass
class BuildProgress:
    """What the build is doing; ``done``/``total`` are set while compiling."""

    phase: str  # source | configure | build | probe | cached
    message: str
    done: int | None = None
    total: int | None = None


ProgressFn = Callable[[BuildProgress], None]


class CompileError(BuildError):
    """The compiler failed; ``details`` are the last error lines, ``log`` the full log."""

    def __init__(self, message: str, details: list[str], log: Path):
        super().__init__(message)
        self.details = details
        self.log = log


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


def build_key(tree_ident: str, backend: str, args: Sequence[str]) -> str:
    """Cache folder name: readable commit prefix, backend, and a hash of everything that matters."""
    payload = json.dumps(
        {
            "source": tree_ident,
            "backend": backend,
            "args": list(args),
            "host": [platform.system(), platform.machine()],
        },
        sort_keys=True,
    )
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


def request_codemodel(build_dir: Path) -> None:
    """Ask CMake (file API, 3.14+) to describe the configured targets; works with every generator."""
    query = build_dir / ".cmake" / "api" / "v1" / "query" / "codemodel-v2"
    query.parent.mkdir(parents=True, exist_ok=True)
    query.touch()


def executable_targets(build_dir: Path) -> dict[str, Path | None]:
    """Executable targets of a configured tree and the binary each produces (file-API reply)."""
    reply = build_dir / ".cmake" / "api" / "v1" / "reply"
    indexes = sorted(reply.glob("index-*.json"))
    if not indexes:
        return {}
    index = json.loads(indexes[-1].read_text())
    model_file = next((o["jsonFile"] for o in index.get("objects", []) if o.get("kind") == "codemodel"), None)
    if model_file is None:
        return {}
    model = json.loads((reply / model_file).read_text())
    found: dict[str, Path | None] = {}
    for config in model.get("configurations", [])[:1]:
        for target in config.get("targets", []):
            detail = json.loads((reply / target["jsonFile"]).read_text())
            if detail.get("type") != "EXECUTABLE":
                continue
            artifacts = detail.get("artifacts") or []
            found[target["name"]] = (build_dir / artifacts[0]["path"]) if artifacts else None
    return found


def choose_targets(available: set[str]) -> dict[str, str]:
    """The binary each role uses in this tree: the newest name that exists (see ROLE_NAMES)."""
    chosen = {}
    for role, names in ROLE_NAMES.items():
        name = next((n for n in names if n in available), None)
        if name:
            chosen[role] = name
    return chosen


def error_lines(log_text: str, limit: int = 8) -> list[str]:
    """The last compiler/CMake error lines of a build log (a CMake error with its indented message)."""
    lines = log_text.splitlines()
    hits = []
    for i, line in enumerate(lines):
        if not re.search(r"\berror\b:|CMake Error|^FAILED:", line, re.I):
            continue
        text = line.rstrip()
        if "CMake Error" in line:
            more = []
            for follow in lines[i + 1 : i + 12]:
                if follow.strip() and not follow[:1].isspace():
                    break
                if follow.strip():
                    more.append(follow.strip())
                if len(more) == 4:
                    break
            text = " ".join([text, *more])
        hits.append(text)
    return hits[-limit:]


def _step(line: str) -> tuple[int, int] | None:
    m = _NINJA_STEP.match(line)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = _MAKE_STEP.match(line)
    return (int(m.group(1)), 100) if m else None


def _stream(cmd: list[str], log: Path, progress: ProgressFn | None, phase: str) -> int:
    """Run a build step, appending its output to the log and reporting ninja/make steps."""
    env = {**os.environ, "LC_ALL": "C", "NINJA_STATUS": "[%f/%t] "}
    env.pop("HF_TOKEN", None)  # nothing a build runs needs it; keep it out of the log
    with log.open("a", encoding="utf-8", errors="replace") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                errors="replace",
                env=env,
            )
        except OSError as exc:
            raise BuildError(f"cannot run {cmd[0]}: {exc}") from exc
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                out.write(line)
                out.flush()  # the log is complete up to the moment of any crash
                step = _step(line)
                if progress and step:
                    progress(BuildProgress(phase, line.strip()[:120], *step))
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        return proc.wait()


def _fail(what: str, log: Path) -> CompileError:
    text = log.read_text(errors="replace")
    details = error_lines(text)
    last = details[-1].strip() if details else "no error line found"
    return CompileError(f"{what} failed ({last}); full log: {log}", details, log)


def _find_binary(build_dir: Path, name: str, artifact: Path | None) -> Path | None:
    for cand in (artifact, build_dir / "bin" / name, build_dir / "bin" / "Release" / name):
        if cand is not None and cand.is_file():
            return cand
    return next((p for p in build_dir.rglob(name) if p.is_file() and os.access(p, os.X_OK)), None)


def compiler_version(build_dir: Path) -> str:
    """First line of ``--version`` of the C++ compiler CMake chose."""
    try:
        cache = (build_dir / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        cache = ""
    m = re.search(r"^CMAKE_CXX_COMPILER:\w+=(.+)$", cache, re.M)
    exe = m.group(1).strip() if m else (shutil.which("c++") or "")
    if not exe:
        return ""
    try:
        out = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return exe
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0] if first else exe


def _generator() -> list[str]:
    return ["-G", "Ninja"] if shutil.which("ninja") else []


def _cached(info_path: Path) -> BuildInfo | None:
    if not info_path.is_file():
        return None
    info = BuildInfo.load(info_path)
    return info if all(Path(b.path).is_file() for b in info.binaries.values()) else None


def build_dir_for(key: str) -> Path:
    return paths.builds_dir() / key


def ensure_build(
    backend: str = "auto",
    source: Path | str | None = None,
    jobs: int | None = None,
    cmake_args: Sequence[str] = (),
    force: bool = False,
    progress: ProgressFn | None = None,
) -> BuildInfo:
    """The BuildInfo of llama.cpp built for this machine; builds it only when not cached (or ``force``)."""
    concrete, caps = resolve_backend(backend)
    report = (lambda msg: progress(BuildProgress("source", msg))) if progress else None
    tree = resolve_source(source, report)
    build_commit = tree.commit if tree.commit and tree.origin in {"sdist", "marker"} else None
    args = configure_args(concrete, cmake_args, caps, build_commit, backend_switch(tree.path, concrete))
    key = build_key(tree.ident, concrete, args)
    bdir = build_dir_for(key)
    info_path = bdir / BUILD_JSON
    if not force and (info := _cached(info_path)) is not None:
        return info
    paths.builds_dir().mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(bdir) + ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if progress:
            progress(BuildProgress("wait", f"another specbench process is building {key}; waiting for it"))
        lock.acquire()
    try:
        if not force and (info := _cached(info_path)) is not None:
            return info  # built by another process while we waited
        return _build(tree, concrete, args, key, bdir, jobs, force, progress)
    finally:
        lock.release()


def _build(
    tree: SourceTree,
    backend: str,
    args: list[str],
    key: str,
    bdir: Path,
    jobs: int | None,
    force: bool,
    progress: ProgressFn | None,
) -> BuildInfo:
    check_tools()
    gen = _generator()
    if force and bdir.exists():
        shutil.rmtree(bdir)
    cache = bdir / "CMakeCache.txt"
    if cache.is_file() and ("CMAKE_GENERATOR:INTERNAL=Ninja" in cache.read_text(errors="replace")) != bool(
        gen
    ):
        shutil.rmtree(bdir)  # configured with another generator; cmake refuses to switch in place
    bdir.mkdir(parents=True, exist_ok=True)
    (bdir / BUILD_JSON).unlink(missing_ok=True)
    log = bdir / BUILD_LOG
    log.write_text(f"# specbench build {key} of {tree.path} ({tree.origin}, {tree.ident})\n")

    def note(phase: str, msg: str) -> None:
        if progress:
            progress(BuildProgress(phase, msg))

    note("configure", f"configuring {tree.path} ({backend})")
    cmake = shutil.which("cmake") or "cmake"
    request_codemodel(bdir)
    if _stream([cmake, "-S", str(tree.path), "-B", str(bdir), *gen, *args], log, progress, "configure") != 0:
        raise _fail("configuring llama.cpp with cmake", log)
    executables = executable_targets(bdir)
    roles = choose_targets(set(executables))
    if "completion" not in roles and "speculative" not in roles:
        raise BuildError(
            f"{tree.path} defines none of the llama.cpp programs specbench runs "
            f"({', '.join(ROLE_NAMES['completion'] + ROLE_NAMES['speculative'])}); "
            f"is it a llama.cpp tree?"
        )
    targets = sorted(set(roles.values()))
    note("build", f"building {', '.join(targets)}")
    cmd = [
        cmake,
        "--build",
        str(bdir),
        "--config",
        "Release",
        "-j",
        str(jobs or os.cpu_count() or 2),
        "--target",
        *targets,
    ]
    if _stream(cmd, log, progress, "build") != 0:
        raise _fail("compiling llama.cpp", log)
    binaries: dict[str, BinaryInfo] = {}
    for role, name in roles.items():
        path = _find_binary(bdir, name, executables.get(name))
        if path is None:
            raise BuildError(f"the build made no {name} binary; see {log}")
        note("probe", f"probing {name} --help")
        binaries[role] = probe_binary(role, path)
    first = next(iter(binaries.values()))
    info = BuildInfo(
        key=key,
        source=str(tree.path),
        commit=tree.commit,
        backend=backend,
        cmake_args=args,
        compiler=compiler_version(bdir),
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
        bin_dir=str(Path(first.path).parent),
        binaries=binaries,
        origin=tree.origin,
        log=str(log),
    )
    tmp = bdir / (BUILD_JSON + ".tmp")
    info.save(tmp)
    tmp.replace(bdir / BUILD_JSON)
    return info

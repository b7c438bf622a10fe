"""Configure and build llama.cpp with CMake, once per (source commit, backend, cmake arguments).

``build.json`` is written last, so its presence means a complete build: a second identical
``ensure_build`` only reads it and never runs cmake.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from filelock import FileLock, Timeout

from specbench.base import paths
from specbench.base.errors import BuildError
from specbench.base.formats import now_iso
from specbench.base.redact import redact
from specbench.builder import cmake, selftest, toolkit, workarea
from specbench.builder.buildinfo import ROLE_COMMANDS, ROLE_NAMES, UNIFIED_TARGET, BinaryInfo, BuildInfo
from specbench.builder.buildplan import BUILD_JSON, BUILD_LOG, BuildPlan, load_cached, plan_build
from specbench.builder.cmake import BuildProgress, ProgressFn
from specbench.builder.gitref import commit_entries
from specbench.builder.probe import PROBE_VERSION, PROBED_OPTIONS, probe_binary, unified_command


def check_tools() -> None:
    """cmake and C/C++ compilers must be on PATH before anything is configured."""
    if shutil.which("cmake") is None:
        raise BuildError(
            "cmake not found on PATH; install it (apt install cmake, brew install cmake "
            "or pip install cmake) and run again"
        )
    for lang, var, names in (("C++", "CXX", ("c++", "g++", "clang++")), ("C", "CC", ("cc", "gcc", "clang"))):
        given = os.environ.get(var, "").split()
        if not (shutil.which(given[0]) if given else any(shutil.which(c) for c in names)):
            raise BuildError(
                f"no {lang} compiler found ({names[0]}, {names[1]} or {names[2]} on PATH, or ${var}); "
                "install one (apt install build-essential, or xcode-select --install on macOS)"
            )


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
    ``source`` + ``ref``: that commit of a git checkout, exported (its work tree and index untouched)."""
    report = (lambda msg: progress(BuildProgress("source", msg))) if progress else None
    _refuse_unbuildable(backend, cmake_args)
    plan = plan_build(backend, source, cmake_args, report, ref)
    info_path = plan.build_dir / BUILD_JSON
    if not force and (info := load_cached(info_path)) is not None:
        return _as_asked(checked(info, info_path, progress), plan)
    paths.builds_dir().mkdir(parents=True, exist_ok=True)
    with _locked(plan.build_dir, f"another specbench process is building {plan.key}; waiting", progress):
        if not force and (info := load_cached(info_path)) is not None:
            return _as_asked(checked(info, info_path, progress), plan)  # built by another process meanwhile
        return checked(_build(plan, jobs, force, progress), info_path, progress)


def _refuse_unbuildable(backend: str, cmake_args: Sequence[str]) -> None:
    """A GPU backend this machine cannot build is refused before the source is found (minutes of
    download on a fresh machine), unless a build of that backend is cached (it needs no toolkit)."""
    if backend not in ("cuda", "metal"):
        return
    if all(b.backend != backend for b in BuildInfo.load_all(paths.builds_dir())):
        toolkit.check_backend(backend, cmake_args)


def checked(info: BuildInfo, info_path: Path, progress: ProgressFn | None = None) -> BuildInfo:
    """``info`` with a self-test made on this machine: after a build, and the first time a cached
    build is used where the CPU or GPUs differ from where it was checked (seconds; saved in build.json)."""
    if not selftest.needs_selftest(info):
        return info
    say = (lambda msg: progress(BuildProgress("selftest", msg))) if progress else None
    if say:
        say(f"decoding a few tokens of {', '.join(selftest.WEIGHT_TYPES)} on this machine")
    info.selftest = selftest.run_selftest(info, say)
    with suppress(OSError):  # a read-only cache: this process still runs with the fresh record
        info.save(info_path)
    return info


def _as_asked(info: BuildInfo, plan: BuildPlan) -> BuildInfo:
    """A cached build as this caller named it: a commit built once (keyed by its sha) serves ``main~1``,
    its sha and another clone alike, and each caller's record names its own ref and checkout."""
    ref = plan.ref.ref if plan.ref is not None else None
    source = str(plan.tree.path) if plan.ref is not None else info.source
    if (info.ref, info.source) == (ref, source):
        return info
    return info.model_copy(update={"ref": ref, "source": source})


@contextmanager
def _locked(path: Path, waiting: str, progress: ProgressFn | None) -> Iterator[None]:
    lock = FileLock(str(path) + ".lock")
    try:
        held = lock.acquire(timeout=0)
    except Timeout:
        if progress:
            progress(BuildProgress("wait", waiting))
        held = lock.acquire()
    with held:  # released however the block ends
        yield


def _build(plan: BuildPlan, jobs: int | None, force: bool, progress: ProgressFn | None) -> BuildInfo:
    check_tools()
    toolkit.check_backend(plan.backend, plan.args)  # a GPU backend's toolkit and GPU, before cmake runs
    tree = None if plan.exported else plan.tree.path
    area = workarea.work_dir() / workarea.area_key(plan.backend, plan.args, tree)
    area.parent.mkdir(parents=True, exist_ok=True)
    with _locked(area, f"another build is using {area}; waiting", progress):
        try:
            return _build_in(plan, area, jobs, force, progress)
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: the CLI prints ``kept`` after it
            exc.kept = (  # type: ignore[attr-defined]
                f"nothing cached; the next `specbench build` goes on from the objects compiled in {area}"
            )
            raise


def _unified_roles(path: Path, have: set[str], note: Callable[[str, str], None]) -> dict[str, BinaryInfo]:
    """The roles the unified `llama` program plays where no standalone program does: each role's
    first command (``ROLE_COMMANDS``) whose ``--help`` the program answers."""
    found: dict[str, BinaryInfo] = {}
    for role, names in ROLE_COMMANDS.items():
        if role in have:
            continue
        note("probe", f"probing {path.name} {'|'.join(names)} --help")
        command = unified_command(path, names)
        if command is not None:
            found[role] = probe_binary(role, path, [command])
    return found


def _commit_defines(commit: str, args: Sequence[str]) -> list[str]:
    """The commit of a user's git checkout for its ``--version``: its copy has no ``.git`` to ask.
    Given at configure time only, so the cache key of such a tree stays what it was."""
    given = {a.split("=", 1)[0] for a in args}
    return [f"-D{k}={v}" for k, v in workarea.commit_defines(commit).items() if f"-D{k}" not in given]


def _build_in(
    plan: BuildPlan, area: Path, jobs: int | None, force: bool, progress: ProgressFn | None
) -> BuildInfo:
    tree, backend, args, key, bdir = plan.tree, plan.backend, plan.args, plan.key, plan.build_dir
    started = time.monotonic()
    gen = cmake.generator()
    wbuild, src = area / "build", area / "src"
    cache = wbuild / "CMakeCache.txt"
    if wbuild.exists() and (force or cache.is_file() and not cmake.cache_fits(cache, src, bool(gen))):
        shutil.rmtree(wbuild)
    wbuild.mkdir(parents=True, exist_ok=True)
    bdir.mkdir(parents=True, exist_ok=True)
    (bdir / BUILD_JSON).unlink(missing_ok=True)
    log = bdir / BUILD_LOG
    log.write_text(redact(f"# specbench build {key} of {plan.describe} ({tree.origin}) in {area}\n"))

    def note(phase: str, msg: str) -> None:
        if progress:
            progress(BuildProgress(phase, msg))

    # every tree is compiled from a copy: a user's tree is never written into (``workarea``)
    note("source", f"{'exporting' if plan.exported else 'copying'} {plan.describe} into {src}")
    if plan.ref is not None:
        entries = commit_entries(plan.ref)
    else:
        entries = workarea.dir_entries(tree.path) if plan.exported else workarea.tree_entries(tree.path)
    synced = workarea.sync_tree(entries, src)
    note("source", f"{synced.written} files written, {synced.removed} removed, {synced.unchanged} kept")
    for supplied in workarea.supply_missing(src, tree.path):
        note(
            "source",
            f"{supplied}: the tree's CMake runs it but the tree lacks it; llama.cpp's own put in the copy",
        )
    env = workarea.build_env()
    note("configure", f"configuring {plan.describe} ({backend})")
    cmake_exe = shutil.which("cmake") or "cmake"
    cmake.request_codemodel(wbuild)
    named = [] if plan.exported or not tree.commit else _commit_defines(tree.commit, args)
    configure = [cmake_exe, "-S", str(src), "-B", str(wbuild), *gen, *args, *named]
    if cmake.stream_step(configure, log, progress, "configure", env) != 0:
        raise cmake.compile_failure("configuring llama.cpp with cmake", log)
    executables = cmake.executable_targets(wbuild)
    # the program each role uses in this tree: the newest name it defines (ROLE_NAMES: newest first)
    found = {role: next((n for n in names if n in executables), None) for role, names in ROLE_NAMES.items()}
    roles = {role: name for role, name in found.items() if name}
    # the unified `llama` plays the roles no standalone program of the tree plays (probed below)
    unified = UNIFIED_TARGET in executables and any(r not in roles for r in ROLE_NAMES)
    if "completion" not in roles and "speculative" not in roles and not unified:
        raise BuildError(
            f"{tree.path} defines none of the llama.cpp programs specbench runs "
            f"({', '.join(ROLE_NAMES['completion'] + ROLE_NAMES['speculative'])}, or a unified `llama`); "
            f"is it a llama.cpp tree?"
        )
    targets = sorted(set(roles.values()) | ({UNIFIED_TARGET} if unified else set()))
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
    if unified:
        binaries.update(_unified_roles(copied[UNIFIED_TARGET], set(binaries), note))
    if "completion" not in binaries and "speculative" not in binaries:
        raise BuildError(
            f"{tree.path} builds a `llama` program with no completion or speculative command; "
            "is it a llama.cpp tree?"
        )
    info = BuildInfo(
        key=key,
        source=str(tree.path),
        commit=tree.commit,
        ref=plan.ref.ref if plan.ref is not None else None,
        backend=backend,
        cmake_args=args,
        compiler=cmake.compiler_version(wbuild),
        built_at=now_iso(),
        bin_dir=str(bdir / "bin"),
        binaries=binaries,
        probe_version=PROBE_VERSION,
        probed_options=list(PROBED_OPTIONS),
        origin=tree.origin,
        log=str(log),
        build_s=round(time.monotonic() - started, 1),
        build_steps=steps[-1] if steps else 0,
        work_area=str(area),
        ccache=workarea.find_ccache(),
        programs=sorted(executables),
    )
    info.save(bdir / BUILD_JSON)
    return info

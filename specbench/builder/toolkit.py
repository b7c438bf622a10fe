"""Whether this machine can build a GPU backend, checked before cmake is configured.

A CUDA build needs nvcc, cuBLAS and an NVIDIA GPU, a Metal build macOS; without this check cmake fails
minutes in (``CUDA::cublas but the target was not found``). The toolkit is looked for where CMake's
FindCUDAToolkit looks.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from specbench.base.errors import BuildError
from specbench.machine.envinfo import GpuInfo, nvidia_gpus

CUDA_HOW = (
    "install the CUDA toolkit with cuBLAS and the NVIDIA driver "
    "(https://developer.nvidia.com/cuda-downloads; Debian/Ubuntu: apt install nvidia-cuda-toolkit), "
    "or build for the CPU (llama_cpp: {backend: cpu}, --backend cpu)"
)
METAL_HOW = "use backend cpu here (or cuda with an NVIDIA GPU)"
DEFAULT_NVCC = Path("/usr/local/cuda/bin/nvcc")  # where cmake finds nvcc off PATH
_SYSTEM_LIBS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")
_SYSTEM_INCLUDES = ("/usr/include",)


def find_nvcc(env: Mapping[str, str] = os.environ) -> str | None:
    """The nvcc cmake would use: ``$CUDACXX``, ``nvcc`` on PATH, or CUDA's default install folder."""
    given = env.get("CUDACXX", "").strip()
    if given:
        return shutil.which(given, path=env.get("PATH")) or (given if Path(given).is_file() else None)
    found = shutil.which("nvcc", path=env.get("PATH"))
    return found or (str(DEFAULT_NVCC) if DEFAULT_NVCC.is_file() else None)


def toolkit_roots(nvcc: str, env: Mapping[str, str] = os.environ) -> list[Path]:
    """Where the toolkit's libraries and headers may be: the roots named in the environment, the one
    nvcc reports (its ``TOP``), and the folder above nvcc's own."""
    roots = [Path(env[k]) for k in ("CUDAToolkit_ROOT", "CUDA_PATH", "CUDA_HOME") if env.get(k)]
    try:
        out = subprocess.run(
            [nvcc, "--dryrun", "-c", "x.cu", "-o", "x.o"], capture_output=True, text=True, timeout=30,
            env=dict(env), stdin=subprocess.DEVNULL,
        )  # fmt: skip
        text = out.stdout + out.stderr
    except (OSError, subprocess.SubprocessError):
        text = ""
    m = re.search(r"^#\$ TOP=(.+)$", text, re.MULTILINE)
    if m:
        roots.append(Path(m.group(1).strip()))
    roots.append(Path(os.path.realpath(nvcc)).parent.parent)
    return list(dict.fromkeys(Path(os.path.normpath(r)) for r in roots))


def _has(folders: Sequence[Path], pattern: str) -> bool:
    return any(next(iter(f.glob(pattern)), None) is not None for f in folders if f.is_dir())


def cublas_missing(roots: Sequence[Path]) -> list[str]:
    """What of cuBLAS is not found under ``roots`` or the system folders: its library, its header."""
    libs = [r / d for r in roots for d in ("lib64", "lib")]
    incs = [r / "include" for r in roots]
    for r in roots:
        for t in r.glob("targets/*"):  # targets/<triple>/ (cross toolkits, conda)
            libs += [t / "lib", t / "lib64"]
            incs.append(t / "include")
    libs += [Path(d) for d in _SYSTEM_LIBS]
    incs += [Path(d) for d in _SYSTEM_INCLUDES]
    missing = []
    if not _has(libs, "libcublas.*") and not _has(libs, "libcublas_static.*"):
        missing.append("libcublas")
    if not _has(incs, "cublas_v2.h"):
        missing.append("cublas_v2.h")
    return missing


def gpu_missing(env: Mapping[str, str] = os.environ) -> str | None:
    """Why no NVIDIA GPU is usable here (None when ``nvidia-smi -L`` lists one)."""
    smi = shutil.which("nvidia-smi", path=env.get("PATH"))
    if smi is None:
        return "no NVIDIA GPU (nvidia-smi not found: no driver)"
    try:
        out = subprocess.run(
            [smi, "-L"], capture_output=True, text=True, timeout=30, env=dict(env), stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"no NVIDIA GPU (nvidia-smi failed: {exc})"
    if out.returncode != 0 or "GPU" not in out.stdout:
        said = (out.stderr or out.stdout).strip().splitlines()
        return f"no NVIDIA GPU (nvidia-smi: {said[0] if said else f'exit {out.returncode}'})"
    return None


def cuda_toolkit_missing(env: Mapping[str, str] = os.environ) -> list[str]:
    """What of the CUDA toolkit a build needs is not here: nvcc, cuBLAS (the GPU aside)."""
    nvcc = find_nvcc(env)
    if nvcc is None:
        return ["no CUDA compiler (nvcc not on PATH, $CUDACXX unset)"]
    roots = toolkit_roots(nvcc, env)
    if lacks := cublas_missing(roots):
        kits = [r for r in roots if _has([r / "include", *r.glob("targets/*/include")], "cuda_runtime.h")]
        where = ", ".join(str(r) for r in kits or roots)
        return [f"the CUDA toolkit at {where} has no cuBLAS ({', '.join(lacks)} not found)"]
    return []


def backend_missing(
    backend: str,
    cmake_args: Sequence[str] = (),
    env: Mapping[str, str] = os.environ,
    platform: str = sys.platform,
) -> list[str]:
    """What this machine lacks to build (and run) ``backend``; empty when nothing is missing."""
    if backend == "metal":
        return [] if platform == "darwin" else [f"Metal builds only on macOS (this is {platform})"]
    if backend != "cuda":
        return []
    missing = cuda_toolkit_missing(env)
    cross = any(a.startswith("-DCMAKE_CUDA_ARCHITECTURES") for a in cmake_args)  # for another machine's GPU
    if not cross and (why := gpu_missing(env)):
        missing.append(why)
    return missing


def check_backend(
    backend: str,
    cmake_args: Sequence[str] = (),
    env: Mapping[str, str] = os.environ,
    platform: str = sys.platform,
) -> None:
    """Refuse, in one line, a GPU build this machine cannot make: what is missing, how to get it."""
    missing = backend_missing(backend, cmake_args, env, platform)
    if not missing:
        return
    how = METAL_HOW if backend == "metal" else CUDA_HOW
    if backend == "cuda" and missing[-1].startswith("no NVIDIA GPU") and len(missing) == 1:
        how = (
            "install the NVIDIA driver on a machine with an NVIDIA GPU, build for the CPU (--backend cpu), "
            "or build for another machine's GPU with --cmake-arg -DCMAKE_CUDA_ARCHITECTURES=NN"
        )
    raise BuildError(f"backend {backend}: {'; '.join(missing)}; {how}")


def detect_backend(found_gpus: list[GpuInfo] | None = None) -> str:
    """``auto``: CUDA with an NVIDIA GPU and a toolkit that can build for it (nvcc and cuBLAS),
    Metal on Apple silicon, else CPU (a toolkit without cuBLAS would only fail)."""
    if sys.platform == "darwin" and platform.machine() == "arm64":
        return "metal"
    if find_nvcc() and shutil.which("nvidia-smi"):
        if found_gpus is None:
            found_gpus = nvidia_gpus()
        if found_gpus and not cuda_toolkit_missing():
            return "cuda"
    return "cpu"

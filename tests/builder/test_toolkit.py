"""A GPU build this machine cannot make is refused before cmake runs, in one line naming what is
missing (nvcc, cuBLAS, a GPU; macOS for Metal) and how to get it. Stand-in nvcc and nvidia-smi
on a PATH of their own, never this machine's toolkit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specbench.base.errors import BuildError
from specbench.builder import toolkit

SMI_GPU = 'if [ "$1" = -L ]; then echo "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-0)"; fi'
SMI_NO_DRIVER = (
    'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver."; exit 9'
)


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _kit(root: Path, cublas: bool) -> Path:
    """A toolkit tree: nvcc that reports its root as the real one does (``#$ TOP=`` on --dryrun),
    the CUDA runtime header, and cuBLAS (library and header) when asked."""
    _script(root / "bin" / "nvcc", f'echo "#$ TOP={root}/bin/.." >&2')
    (root / "include").mkdir(parents=True)
    (root / "include" / "cuda_runtime.h").write_text("")
    if cublas:
        (root / "targets" / "x86_64-linux" / "lib").mkdir(parents=True)
        (root / "targets" / "x86_64-linux" / "lib" / "libcublas.so.13").write_text("")
        (root / "include" / "cublas_v2.h").write_text("")
    return root


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """An empty PATH folder, and no system folders or default nvcc of this machine's looked at."""
    monkeypatch.setattr(toolkit, "_SYSTEM_LIBS", ())
    monkeypatch.setattr(toolkit, "_SYSTEM_INCLUDES", ())
    monkeypatch.setattr(toolkit, "DEFAULT_NVCC", tmp_path / "no" / "nvcc")
    (tmp_path / "bin").mkdir()
    return tmp_path


def _error(env: dict, backend: str = "cuda", args=(), platform: str = "linux") -> str:
    with pytest.raises(BuildError) as exc:
        toolkit.check_backend(backend, args, env, platform)
    message = str(exc.value)
    assert "\n" not in message and message.startswith(f"backend {backend}: ")
    return message


def test_no_toolkit_and_no_gpu_names_both_and_how_to_get_them(machine):
    message = _error({"PATH": str(machine / "bin")})
    assert (
        "no CUDA compiler (nvcc not on PATH" in message and "no NVIDIA GPU (nvidia-smi not found" in message
    )
    assert "install the CUDA toolkit with cuBLAS" in message and "--backend cpu" in message


def test_nvcc_without_cublas_is_named_with_the_toolkit_it_found(machine):
    """This VM's case: nvcc on PATH is a wrapper script; the root it reports has no cuBLAS."""
    kit = _kit(machine / "cuda-13.0", cublas=False)
    _script(machine / "bin" / "nvcc", f'exec {kit}/bin/nvcc "$@"')
    _script(machine / "bin" / "nvidia-smi", SMI_GPU)
    message = _error({"PATH": str(machine / "bin")})
    assert f"the CUDA toolkit at {kit} has no cuBLAS (libcublas, cublas_v2.h not found)" in message
    assert "GPU" not in message.split(";")[0] and "no NVIDIA GPU" not in message


def test_a_whole_toolkit_and_a_gpu_pass(machine):
    kit = _kit(machine / "cuda", cublas=True)
    _script(machine / "bin" / "nvidia-smi", SMI_GPU)
    env = {"PATH": str(machine / "bin"), "CUDACXX": str(kit / "bin" / "nvcc")}  # nvcc off PATH, named
    assert toolkit.backend_missing("cuda", (), env) == []
    toolkit.check_backend("cuda", (), env)
    assert toolkit.backend_missing("cpu", (), {"PATH": ""}) == []  # the CPU needs neither


def test_a_driver_that_does_not_answer_is_no_gpu_unless_building_for_another_machine(machine):
    kit = _kit(machine / "cuda", cublas=True)
    _script(machine / "bin" / "nvidia-smi", SMI_NO_DRIVER)
    env = {"PATH": f"{machine / 'bin'}{os.pathsep}{kit / 'bin'}"}
    message = _error(env)
    assert "no NVIDIA GPU (nvidia-smi: NVIDIA-SMI has failed" in message
    assert "-DCMAKE_CUDA_ARCHITECTURES=NN" in message  # a GPU is all that is missing: the ways on
    # architectures named: a build for another machine's GPU needs none here
    assert toolkit.backend_missing("cuda", ["-DCMAKE_CUDA_ARCHITECTURES=89"], env) == []


def test_metal_off_macos_is_refused_and_on_macos_is_not():
    assert _error({}, "metal", platform="linux") == (
        "backend metal: Metal builds only on macOS (this is linux); use backend cpu here (or cuda with an "
        "NVIDIA GPU)"
    )
    assert toolkit.backend_missing("metal", platform="darwin") == []


@pytest.mark.skipif(sys.platform == "darwin", reason="Metal builds there")
@pytest.mark.parametrize("backend", ["cuda", "metal"])
def test_specbench_build_refuses_in_one_line_before_cmake(tmp_path, backend):
    """The command itself, with cmake and compilers on PATH but no nvidia-smi: exit 1, one line."""
    bins = tmp_path / "bin"
    bins.mkdir()
    found = {t: shutil.which(t) for t in ("cmake", "cc", "c++", "git")}
    for tool in ("cc", "c++", "git"):
        if found[tool]:
            (bins / tool).symlink_to(found[tool])
    marker = tmp_path / "configured"  # cmake, or a stand-in that says it ran
    _script(bins / "cmake", f'touch {marker}; exec {found["cmake"] or "false"} "$@"')
    done = subprocess.run(
        [str(Path(sys.executable).parent / "specbench"), "build", "--backend", backend],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PATH": str(bins)},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith(f"error: backend {backend}: ") and "Traceback" not in done.stderr
    assert ("no NVIDIA GPU" in lines[-1]) if backend == "cuda" else ("only on macOS" in lines[-1])
    assert not marker.exists()  # cmake never ran


@pytest.mark.skipif(sys.platform == "darwin", reason="auto is Metal there")
@pytest.mark.parametrize("cublas", [False, True])
def test_auto_picks_cuda_only_where_it_can_be_built(machine, monkeypatch, cublas):
    """A GPU and nvcc but no cuBLAS: ``auto`` builds for the CPU rather than a build that fails."""
    from specbench.builder.toolkit import detect_backend
    from specbench.machine.envinfo import GpuInfo

    kit = _kit(machine / "cuda", cublas=cublas)
    _script(machine / "bin" / "nvcc", f'exec {kit}/bin/nvcc "$@"')
    _script(machine / "bin" / "nvidia-smi", SMI_GPU)
    monkeypatch.setenv("PATH", str(machine / "bin"))
    monkeypatch.delenv("CUDACXX", raising=False)
    for var in ("CUDAToolkit_ROOT", "CUDA_PATH", "CUDA_HOME"):
        monkeypatch.delenv(var, raising=False)
    gpu = GpuInfo(name="NVIDIA GeForce RTX 4090", driver="550.1", memory_mb=24564, compute_cap="8.9")
    assert detect_backend([gpu]) == ("cuda" if cublas else "cpu")

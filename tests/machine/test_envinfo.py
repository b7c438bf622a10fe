"""specbench.machine.envinfo and `specbench env`: what the machine is, read from the OS."""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys

import pytest

from specbench import __version__
from specbench.builder.toolkit import detect_backend
from specbench.machine.envinfo import collect, parse_nvidia_smi, parse_system_profiler
from tests.fixtures.build import cli

# `nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader,nounits`
NVIDIA_SMI_TWO_GPUS = """NVIDIA GeForce RTX 4090, 550.54.14, 24564, 8.9
NVIDIA H100 80GB HBM3, 550.54.14, 81559, 9.0
"""

# `system_profiler SPDisplaysDataType -json` on an M2 Pro (excerpt)
SYSTEM_PROFILER_M2 = json.dumps(
    {
        "SPDisplaysDataType": [
            {
                "_name": "Apple M2 Pro",
                "sppci_cores": "19",
                "sppci_model": "Apple M2 Pro",
                "spdisplays_mtlgpufamilysupport": "spdisplays_metal3",
                "spdisplays_vendor": "sppci_vendor_Apple",
            }
        ]
    }
)


def test_parse_nvidia_smi():
    gpus = parse_nvidia_smi(NVIDIA_SMI_TWO_GPUS)
    assert [g.name for g in gpus] == ["NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3"]
    assert (gpus[0].driver, gpus[0].memory_mb, gpus[0].compute_cap) == ("550.54.14", 24564, "8.9")
    assert gpus[1].compute_cap == "9.0"
    old_driver = parse_nvidia_smi("Tesla T4, 470.82.01, 15109\n")
    assert old_driver[0].compute_cap is None and old_driver[0].memory_mb == 15109
    assert parse_nvidia_smi("") == []


def test_parse_system_profiler():
    gpus = parse_system_profiler(SYSTEM_PROFILER_M2)
    assert len(gpus) == 1 and gpus[0].name == "Apple M2 Pro"
    assert gpus[0].memory_mb is None  # unified memory: no separate VRAM
    assert parse_system_profiler("not json") == []


def test_collect_describes_this_machine():
    info = collect(detect_backend)
    expected_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert info.cpu_cores == expected_cores
    assert info.cpu_model
    assert info.ram_gb is not None and info.ram_gb > 0
    assert info.python == platform.python_version()
    assert info.specbench_version == __version__
    assert info.arch == platform.machine()
    assert info.backend == detect_backend(info.gpus if sys.platform != "darwin" else None)
    assert "builds" not in info.model_dump()  # only `specbench env` lists the cache (EnvReport)
    if shutil.which("nvidia-smi") is None and sys.platform != "darwin":
        assert info.gpus == [] and info.backend == "cpu"


@pytest.mark.slow
def test_env_json_lists_the_machine_and_cached_builds(llama_build):
    result = cli("env", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    for field in ("os", "cpu_model", "cpu_cores", "ram_gb", "gpus", "python", "specbench_version", "backend"):
        assert field in data
    keys = {b["key"]: b for b in data["builds"]}
    assert llama_build.key in keys
    assert keys[llama_build.key]["bin_dir"] == llama_build.bin_dir
    assert "completion" in keys[llama_build.key]["roles"]
    text = cli("env")
    assert text.returncode == 0 and llama_build.key in text.stdout

"""What machine the numbers come from: OS, CPU, RAM, GPUs, versions. Stored in every run's manifest.

Everything is read from the OS (``/proc``, ``sysctl``, ``nvidia-smi``, ``system_profiler``); a tool
that is missing or fails leaves its fields empty rather than failing the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from specbench import __version__
from specbench.base import lifeline
from specbench.base.childenv import child_env, provenance_env
from specbench.base.formats import json_text

TOOL_TIMEOUT_S = 15


class GpuInfo(BaseModel):
    name: str
    driver: str = ""
    memory_mb: int | None = None
    compute_cap: str | None = None  # NVIDIA only, e.g. "8.9"


class EnvInfo(BaseModel):
    hostname: str | None = None  # None in manifests written before it was recorded
    os: str
    arch: str
    cpu_model: str
    cpu_cores: int  # logical CPUs this process may use
    ram_gb: float | None = None
    gpus: list[GpuInfo] = Field(default_factory=list)
    python: str
    specbench_version: str
    backend: str  # what `specbench build --backend auto` picks here
    cpu_isa: list[str] = Field(default_factory=list)  # the CPU's instruction-set flags (avx2, amx_int8...)
    # the variables that change llama.cpp (LLAMA_ARG_*, GGML_*, CUDA_VISIBLE_DEVICES...) as children see them
    variables: dict[str, str] = Field(default_factory=dict)


def tool_output(cmd: list[str], timeout_s: float = TOOL_TIMEOUT_S) -> str | None:
    """stdout of a tool, or None when it is missing, fails or hangs."""
    exe = shutil.which(cmd[0])
    if exe is None:
        return None
    try:
        result = lifeline.run([exe, *cmd[1:]], timeout_s, text=True, env=child_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 else None


def _text(path: str) -> str:
    """A system file's text, empty when it cannot be read."""
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def os_name() -> str:
    """Kernel plus distribution (Linux) or product version (macOS)."""
    base = f"{platform.system()} {platform.release()}"
    if sys.platform == "darwin":
        return f"macOS {platform.mac_ver()[0]} ({base})"
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?$', _text("/etc/os-release"), re.M)
    return f"{base} ({m.group(1)})" if m else base


def cpu_model() -> str:
    if sys.platform == "darwin":
        out = tool_output(["sysctl", "-n", "machdep.cpu.brand_string"])
        if out and out.strip():
            return out.strip()
    text = _text("/proc/cpuinfo")
    for key in ("model name", "Hardware", "cpu model", "Processor"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text, re.M)
        if m:
            return m.group(1).strip()
    out = tool_output(["lscpu"])
    m = re.search(r"^Model name:\s*(.+)$", out or "", re.M)
    return m.group(1).strip() if m else (platform.processor() or platform.machine())


# Instruction-set flags a -march=native build can use (x86 /proc/cpuinfo "flags", arm "Features",
# macOS sysctl): a binary built where one of them exists dies of SIGILL where it does not.
_ISA = re.compile(
    r"^(?:sse\w*|ssse3|avx\w*|fma\w*|f16c|bmi\w*|amx\w*|vnni\w*|popcnt|movbe|aes|sha\w*|vaes|vpclmulqdq"
    r"|gfni|asimd\w*|neon|fphp|sve\w*|sme\d?|i8mm|dotprod|bf16|fp16|fhm|lse|crc32)$",
    re.I,
)


def cpu_isa() -> list[str]:
    """This CPU's instruction-set flags, sorted (empty when the OS does not say)."""
    words: list[str] = []
    if sys.platform == "darwin":
        for key in ("machdep.cpu.features", "machdep.cpu.leaf7_features", "hw.optional"):
            words += (tool_output(["sysctl", "-n", key]) or "").split()
    else:
        m = re.search(r"^(?:flags|Features)\s*:\s*(.*)$", _text("/proc/cpuinfo"), re.M)
        words = m.group(1).split() if m else []
    return sorted({w.lower().rstrip(".") for w in words if _ISA.match(w.rstrip("."))})


def fingerprint(isa: list[str], gpus: list[GpuInfo]) -> str:
    """What a build's self-test is valid for: the CPU's instruction sets, CPU model, and GPUs."""
    payload = json_text(
        {"cpu": cpu_model(), "isa": isa, "gpus": [[g.name, g.compute_cap] for g in gpus]}, None
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def our_cpus() -> set[int] | None:
    """The CPUs this process may run on (None where the OS does not say)."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def cpu_cores() -> int:
    """How many CPUs this process may run on."""
    return len(our_cpus() or ()) or os.cpu_count() or 1


def ram_gb() -> float | None:
    if sys.platform == "darwin":
        out = tool_output(["sysctl", "-n", "hw.memsize"])
        return round(int(out) / 2**30, 1) if out and out.strip().isdigit() else None
    m = re.search(r"^MemTotal:\s*(\d+) kB", _text("/proc/meminfo"), re.M)
    return round(int(m.group(1)) / 2**20, 1) if m else None


def parse_nvidia_smi(csv: str) -> list[GpuInfo]:
    """Rows of ``--query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader,nounits``."""
    gpus = []
    for line in csv.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 3 or not cells[0]:
            continue
        memory = int(cells[2]) if cells[2].isdigit() else None
        cap = cells[3] if len(cells) > 3 and re.fullmatch(r"\d+\.\d+", cells[3]) else None
        gpus.append(GpuInfo(name=cells[0], driver=cells[1], memory_mb=memory, compute_cap=cap))
    return gpus


def nvidia_gpus() -> list[GpuInfo]:
    fields = "name,driver_version,memory.total"
    out = tool_output(["nvidia-smi", f"--query-gpu={fields},compute_cap", "--format=csv,noheader,nounits"])
    if out is None:  # drivers older than compute_cap support
        out = tool_output(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"])
    return parse_nvidia_smi(out or "")


def parse_system_profiler(text: str) -> list[GpuInfo]:
    """GPUs from ``system_profiler SPDisplaysDataType -json`` (Apple silicon shares system memory)."""
    try:
        items = json.loads(text).get("SPDisplaysDataType", [])
    except (ValueError, AttributeError):
        return []
    gpus = []
    for item in items:
        if not isinstance(item, dict):
            continue
        vram = str(item.get("spdisplays_vram") or item.get("spdisplays_vram_shared") or "")
        m = re.match(r"(\d+)\s*(GB|MB)", vram)
        mem = (int(m.group(1)) * (1024 if m.group(2) == "GB" else 1)) if m else None
        driver = str(item.get("spdisplays_mtlgpufamilysupport") or item.get("spdisplays_metal") or "")
        name = str(item.get("sppci_model") or item.get("_name") or "GPU")
        gpus.append(GpuInfo(name=name, driver=driver, memory_mb=mem))
    return gpus


def gpus() -> list[GpuInfo]:
    if sys.platform == "darwin":
        return parse_system_profiler(tool_output(["system_profiler", "SPDisplaysDataType", "-json"]) or "")
    return nvidia_gpus()


def collect(pick_backend: Callable[[list[GpuInfo] | None], str]) -> EnvInfo:
    """Describe this machine. ``pick_backend``: what ``build --backend auto`` picks given the GPUs
    (``builder.toolkit.detect_backend``, passed in: the builder sits above the machine)."""
    found = gpus()
    return EnvInfo(
        hostname=platform.node() or None,
        os=os_name(),
        arch=platform.machine(),
        cpu_model=cpu_model(),
        cpu_cores=cpu_cores(),
        ram_gb=ram_gb(),
        gpus=found,
        python=platform.python_version(),
        specbench_version=__version__,
        backend=pick_backend(found if sys.platform != "darwin" else None),
        cpu_isa=cpu_isa(),
        variables=provenance_env(),
    )

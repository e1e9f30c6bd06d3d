"""The environment recorded with every experiment, and printed by ``dlbench sysinfo``.

:func:`host_info` is what every worker records: CPU (model, cores, frequencies,
governor), memory, OS and kernel, Python, dlbench's version and git commit, the
environment variables that change performance, and NVIDIA GPUs through NVML
(model, driver, memory, clocks, topology). It imports no framework; a backend adds
its own build (``Backend.environment``), and :func:`pytorch_info` reads PyTorch's
for ``dlbench sysinfo``. Anything a machine does not expose is left out, never an
error.

Example::

    info = host_info()
    info["hw.cpu_model"], info["hw.cpu_cores"], info.get("hw.gpus")
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import socket
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import psutil

import dlbench
from dlbench import __version__
from dlbench.measure.nvml import load_nvml

#: Environment variables that change performance; recorded when set.
PERFORMANCE_ENV_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "KMP_AFFINITY",
    "OMP_PROC_BIND",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUBLAS_WORKSPACE_CONFIG",
    "PYTORCH_CUDA_ALLOC_CONF",
    "NCCL_DEBUG",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
    "TORCH_CUDNN_V8_API_ENABLED",
    "TF_ENABLE_ONEDNN_OPTS",
    "XLA_FLAGS",
)

#: NVML topology levels (nvmlGpuTopologyLevel_t) by the names ``nvidia-smi topo -m`` uses.
TOPOLOGY_LEVELS = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _os_release() -> str | None:
    text = _read_text(Path("/etc/os-release")) or ""
    found = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.MULTILINE)
    return found.group(1) if found else None


def git_commit(root: Path | None = None) -> str | None:
    """The commit checked out in ``root`` (default: dlbench's own source tree), read
    from ``.git`` without running git; None when it is not a git checkout."""
    if root is None:
        package = Path(dlbench.__file__).resolve().parent
        if package.parent.name != "src":  # an installed copy, not a checkout
            return None
        root = package.parent.parent
    git = root / ".git"
    if git.is_file():  # a worktree or submodule: "gitdir: <path>"
        text = _read_text(git) or ""
        if not text.startswith("gitdir:"):
            return None
        git = (root / text.split(":", 1)[1].strip()).resolve()
    head = _read_text(git / "HEAD")
    if head is None:
        return None
    if not head.startswith("ref:"):
        return head or None  # a detached HEAD holds the commit itself
    ref = head.split(":", 1)[1].strip()
    common = Path(_read_text(git / "commondir") or ".")
    for base in (git, (git / common).resolve()):
        direct = _read_text(base / ref)
        if direct:
            return direct
        for line in (_read_text(base / "packed-refs") or "").splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    return None


def split_cores(cores: Sequence[int], parts: int) -> list[list[int]]:
    """``cores`` in ``parts`` contiguous, disjoint sets; the ones left over go to the
    first sets. How parallel copies and data-parallel replicas share a node's cores.

    >>> split_cores([0, 1, 2, 3, 4], 2)
    [[0, 1, 2], [3, 4]]
    """
    if not 1 <= parts <= len(cores):
        raise ValueError(f"cannot split {len(cores)} cores into {parts} sets")
    size, extra = divmod(len(cores), parts)
    sets, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        sets.append(list(cores[start:end]))
        start = end
    return sets


def cpu_list_text(cores: Iterable[int]) -> str:
    """Cores as a Linux cpu list, ranges joined by commas.

    >>> cpu_list_text([0, 1, 2, 3, 8, 10, 11])
    '0-3,8,10-11'
    """
    ranges: list[list[int]] = []
    for core in sorted(set(cores)):
        if ranges and core == ranges[-1][1] + 1:
            ranges[-1][1] = core
        else:
            ranges.append([core, core])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def _cpu_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "hw.cpu_model": _cpu_model(),
        "hw.cpu_count": os.cpu_count(),
        "hw.cpu_cores": psutil.cpu_count(logical=False),
    }
    with contextlib.suppress(Exception):  # absent in some VMs and containers
        freq = psutil.cpu_freq()
        if freq is not None:
            info["hw.cpu_freq_mhz"] = {
                k: round(v) for k, v in freq._asdict().items() if v}
    governor = _read_text(Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"))
    if governor:
        info["hw.cpu_governor"] = governor
    if hasattr(os, "sched_getaffinity"):
        cores = os.sched_getaffinity(0)
        info["hw.cpu_affinity_count"] = len(cores)
        # The cores this process may run on: shows each parallel copy on its own share.
        info["sys.cpu_affinity"] = cpu_list_text(cores)
    info["hw.memory_gib"] = round(psutil.virtual_memory().total / 2**30, 2)
    return info


def _decoded(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _gpu(nvml: Any, index: int) -> dict[str, Any]:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    gpu: dict[str, Any] = {"index": index, "name": _decoded(nvml.nvmlDeviceGetName(handle))}
    optional: dict[str, Callable[[], Any]] = {
        "memory_gib": lambda: round(nvml.nvmlDeviceGetMemoryInfo(handle).total / 2**30, 2),
        "max_sm_clock_mhz": lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, 1),
        "max_memory_clock_mhz": lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, 2),
        "power_limit_w": lambda: nvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000,
        "pci_bus_id": lambda: _decoded(nvml.nvmlDeviceGetPciInfo(handle).busId),
        "compute_capability": lambda: ".".join(
            map(str, nvml.nvmlDeviceGetCudaComputeCapability(handle))),
        "persistence_mode": lambda: bool(nvml.nvmlDeviceGetPersistenceMode(handle)),
    }
    for key, read in optional.items():
        with contextlib.suppress(Exception):  # NotSupported on some boards
            gpu[key] = read()
    links = 0
    for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 0))):
        try:
            links += int(nvml.nvmlDeviceGetNvLinkState(handle, link) == 1)
        except Exception:  # no NVLink, or no more links
            break
    gpu["nvlink_active_links"] = links
    return gpu


def gpu_info(nvml: Any = None) -> dict[str, Any]:
    """``hw.gpus`` (one dict per GPU), ``hw.gpu_count``, ``hw.gpu_driver``,
    ``sys.cuda_driver_version`` and ``hw.gpu_topology`` from NVML; empty without it.

    ``nvml`` is a stand-in for ``pynvml`` in tests; by default NVML is initialised
    here and shut down before returning.
    """
    own = nvml is None
    if own:
        nvml, _why = load_nvml()
        if nvml is None:
            return {}  # the worker's monitor writes the one note about it
    try:
        count = nvml.nvmlDeviceGetCount()
        info: dict[str, Any] = {
            "hw.gpu_count": count,
            "hw.gpus": [_gpu(nvml, i) for i in range(count)],
        }
        with contextlib.suppress(Exception):
            info["hw.gpu_driver"] = _decoded(nvml.nvmlSystemGetDriverVersion())
        with contextlib.suppress(Exception):
            version = int(nvml.nvmlSystemGetCudaDriverVersion())
            info["sys.cuda_driver_version"] = f"{version // 1000}.{version % 1000 // 10}"
        topology: dict[str, str] = {}
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        for i in range(count):
            for j in range(i + 1, count):
                with contextlib.suppress(Exception):
                    level = nvml.nvmlDeviceGetTopologyCommonAncestor(handles[i], handles[j])
                    topology[f"{i}-{j}"] = TOPOLOGY_LEVELS.get(int(level), str(level))
        if topology:
            info["hw.gpu_topology"] = topology
        return info
    except Exception:  # a driver that answers nvmlInit but little else
        return {}
    finally:
        if own:
            with contextlib.suppress(Exception):
                nvml.nvmlShutdown()


def host_info(gpus: bool = True) -> dict[str, Any]:
    """``sys.*``/``hw.*`` values that do not depend on the framework."""
    info: dict[str, Any] = {
        "sys.hostname": socket.gethostname(),
        "sys.os": f"{platform.system()} {platform.release()}",
        "sys.python": platform.python_version(),
        "sys.python_implementation": platform.python_implementation(),
        "sys.python_executable": sys.executable,
        "sys.dlbench_version": __version__,
    }
    distribution = _os_release()
    if distribution:
        info["sys.os_release"] = distribution
    commit = git_commit()
    if commit:
        info["sys.dlbench_git_commit"] = commit
    info.update(_cpu_info())
    info["sys.env"] = {k: os.environ[k] for k in PERFORMANCE_ENV_VARS if k in os.environ}
    if gpus:
        info.update(gpu_info())
    return info


def _onednn_version(config: str) -> str | None:
    found = re.search(r"(?:oneDNN|MKL-DNN)\s+v?([\d.]+)", config)
    return found.group(1) if found else None


def pytorch_info() -> dict[str, Any]:
    """PyTorch's version and build (CUDA, cuDNN, MKL, oneDNN, NCCL, OpenMP, threads),
    or empty when PyTorch is not installed. Imports torch: ``dlbench sysinfo`` and
    ``dlbench peak`` only, never a worker of another framework."""
    try:
        import torch
    except ImportError:
        return {}
    build: dict[str, Any] = {
        "cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "mkl": torch.backends.mkl.is_available(),
        "mkldnn": torch.backends.mkldnn.is_available(),
        "openmp": torch.backends.openmp.is_available(),
        "num_threads": torch.get_num_threads(),
    }
    with contextlib.suppress(Exception):
        build["onednn"] = _onednn_version(str(torch.__config__.show()))
    with contextlib.suppress(Exception):
        build["cudnn"] = torch.backends.cudnn.version()
    if torch.cuda.is_available():
        with contextlib.suppress(Exception):
            build["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    return {"sys.framework": "pytorch", "sys.framework_version": str(torch.__version__),
            "sys.framework_build": build}

"""The framework-independent part of the environment recorded with every experiment."""

from __future__ import annotations

import os
import platform
import socket
import sys
from pathlib import Path
from typing import Any

from dlbench import __version__


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_total_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 2)
    except (OSError, ValueError, IndexError):
        pass
    return None


#: Environment variables that change performance; recorded when set.
PERFORMANCE_ENV_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "PYTORCH_CUDA_ALLOC_CONF",
    "NCCL_DEBUG",
    "TF_ENABLE_ONEDNN_OPTS",
)


def host_info() -> dict[str, Any]:
    """``sys.*``/``hw.*`` values that do not depend on the framework."""
    info: dict[str, Any] = {
        "sys.hostname": socket.gethostname(),
        "sys.os": f"{platform.system()} {platform.release()}",
        "sys.python": platform.python_version(),
        "sys.python_executable": sys.executable,
        "sys.dlbench_version": __version__,
        "hw.cpu_model": _cpu_model(),
        "hw.cpu_count": os.cpu_count(),
        "hw.memory_gib": _memory_total_gib(),
        "sys.env": {k: os.environ[k] for k in PERFORMANCE_ENV_VARS if k in os.environ},
    }
    if hasattr(os, "sched_getaffinity"):
        info["hw.cpu_affinity_count"] = len(os.sched_getaffinity(0))
    return info

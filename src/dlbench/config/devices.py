"""Whether this machine has the CUDA devices an experiment asks for, without importing a
framework.

``exp.gpus`` names CUDA devices, and every framework dlbench runs reaches them through
NVIDIA's driver, whose device nodes (``/dev/nvidia0``, ...) exist wherever a GPU does.
Looking for them costs a directory listing, where asking a framework
(``torch.cuda.is_available()``) costs seconds of import: so ``dlbench run`` refuses a
GPU experiment on a machine without one before any worker starts, instead of the worker
failing after it imported its framework. Used where the workers run on this machine
(the local launcher); a Slurm job's nodes are not the machine that plans it. And how
many processor cores this process may run on (:func:`usable_cores`).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping
from typing import Any

from dlbench.config.frameworks.base import FrameworkInfo
from dlbench.errors import ConfigError

__all__ = ["check_gpus_here", "cuda_device_visible", "usable_cores"]

#: The device nodes NVIDIA's driver makes, one per GPU.
NVIDIA_DEVICES = "/dev/nvidia[0-9]*"


def usable_cores() -> int:
    """How many processor cores this process may run on: its affinity where the system
    says (Linux), else every core."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def cuda_device_visible(env: Mapping[str, str] | None = None) -> bool:
    """Whether a process with ``env`` (default: this one's) may see a CUDA GPU: an
    NVIDIA device node exists and ``CUDA_VISIBLE_DEVICES`` does not hide every GPU.

    >>> cuda_device_visible({"CUDA_VISIBLE_DEVICES": "-1"})
    False
    """
    env = os.environ if env is None else env
    if env.get("CUDA_VISIBLE_DEVICES", "unset").strip() in ("", "-1"):
        return False
    return bool(glob.glob(NVIDIA_DEVICES))


def check_gpus_here(values: Mapping[str, Any], shown: str, framework: FrameworkInfo,
                    env: Mapping[str, str] | None = None) -> None:
    """Refuse, in one line, an experiment whose ``exp.gpus`` names a GPU when no CUDA
    device is visible here (``env``: the workers' environment, default this process's;
    ``shown``: exp.gpus, its value and where it came from, as messages show it).
    A simulated framework (``fake``) only pretends to use its GPUs and is never refused."""
    if framework.simulated or not str(values["exp.gpus"]):
        return
    if cuda_device_visible(env):
        return
    hidden = (env if env is not None else os.environ).get("CUDA_VISIBLE_DEVICES")
    why = (f"CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU" if hidden is not None
           and hidden.strip() in ("", "-1") else "no /dev/nvidia* device")
    raise ConfigError(
        f"{shown} asks for a GPU, and framework {framework.id} sees no CUDA "
        f"device on this machine ({why}); use exp.gpus='' for the CPU, or run where the "
        f"GPUs are (e.g. --launcher slurm)")

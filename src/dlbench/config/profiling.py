"""Plan-time checks of profiling, training to accuracy and the automatic batch size.

The plan asks a framework's declaration which profilers it runs
(``FrameworkInfo.profilers``), never its name, and refuses an
``exp.profile`` it does not list. The NVIDIA tools that wrap the worker (``nsys``,
``ncu``) must be on PATH when the plan is made, so a sweep does not fail one
experiment at a time.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Mapping
from typing import Any

from dlbench.config.catalog import model_info
from dlbench.config.frameworks.base import FrameworkInfo, Shown
from dlbench.config.run_params import WRAPPING_PROFILERS, check_one_process
from dlbench.errors import ConfigError

__all__ = ["check_measurement_extras"]

#: What each NVIDIA tool is, for the message when it is missing.
_TOOL_NAMES = {"nsys": "Nsight Systems", "ncu": "Nsight Compute"}


def check_measurement_extras(
    values: Mapping[str, Any], shown: Shown, framework: FrameworkInfo
) -> None:
    """exp.profile is one the framework declares, and its tool is installed;
    exp.phase=train_to_accuracy has a model and data it can train on;
    exp.replica_batch=auto runs in one process."""
    tool = str(values["exp.profile"])
    supported = ("none", *framework.profilers)
    if tool not in supported:
        raise ConfigError(f"{shown('exp.profile')} is not supported by framework "
                          f"{framework.id}; supported: {', '.join(supported)}")
    if tool in WRAPPING_PROFILERS:
        if not values["exp.gpus"]:
            raise ConfigError(f"{shown('exp.profile')} profiles CUDA kernels and "
                              f"{shown('exp.gpus')} names no GPU; use exp.profile=torch on "
                              f"the CPU")
        # In a container the image brings the tool: it cannot be looked for here.
        if not values["exp.docker"] and shutil.which(tool) is None:
            raise ConfigError(f"{shown('exp.profile')} needs `{tool}` ({_TOOL_NAMES[tool]}) "
                              f"on PATH, and it is not there; install it or use "
                              f"exp.profile=torch")
    if values["exp.replica_batch"] == "auto" and values["exp.num_replicas"] > 1:
        raise ConfigError(f"{shown('exp.replica_batch')} probes batches in one worker "
                          f"process; {shown('exp.num_replicas')} asks for several: give a "
                          f"number")
    if values["exp.phase"] == "train_to_accuracy":
        _check_accuracy(values, shown)


def _check_accuracy(values: Mapping[str, Any], shown: Shown) -> None:
    model = model_info(values, shown)
    if model.domain != "image classification":
        raise ConfigError(f"{shown('exp.phase')} trains an image classifier on real data, "
                          f"and {shown('exp.model')} is not one")
    if not 0 < values["exp.target_accuracy"] <= 1:
        raise ConfigError(f"{shown('exp.target_accuracy')} must be in (0, 1]")
    if not 0 < values["exp.val_fraction"] < 1:
        raise ConfigError(f"{shown('exp.val_fraction')} must be between 0 and 1")
    if values["exp.num_replicas"] > 1:
        raise ConfigError(f"{shown('exp.phase')} runs one replica; "
                          f"{shown('exp.num_replicas')} asks for several")
    check_one_process(values, shown, "runs to a target accuracy", "exp.phase")
    if not values["exp.data_dir"] and importlib.util.find_spec("sklearn") is None:
        raise ConfigError(f"{shown('exp.dataset')} needs scikit-learn (`pip install "
                          f"scikit-learn`), or set exp.data_dir to a folder of class "
                          f"sub-folders of images")

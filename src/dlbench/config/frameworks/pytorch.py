"""PyTorch's declaration; its backend is :mod:`dlbench.backends.pytorch`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlbench.config.frameworks.base import FrameworkInfo, Shown
from dlbench.config.params import COMPILE, DOCKER_IMAGE, OPTIMIZER, SEED, THREADS, Param
from dlbench.config.zoo import zoo_builders
from dlbench.errors import ConfigError

AUTO = "auto"


def use_channels_last(setting: bool | str, on_cuda: bool, sample_shape: tuple[int, ...]) -> bool:
    """What ``pytorch.channels_last`` means on this device for this model: ``auto`` is
    PyTorch's documented practice, channels last for 4-D (image) models on CUDA, where
    cuDNN's Tensor Core convolutions take NHWC (NCHW costs transposes around every
    one), and the default layout on the CPU; true and false are kept as given.

    >>> use_channels_last("auto", True, (3, 224, 224)), use_channels_last("auto", False, (3, 8, 8))
    (True, False)
    """
    if setting == AUTO:
        return on_cuda and len(sample_shape) == 3
    return bool(setting)


def check(values: Mapping[str, Any], shown: Shown) -> None:
    """What PyTorch's generation loop (``backends/pytorch/generate.py``) does not run."""
    if values["exp.phase"] == "generate" and values["pytorch.compile"]:
        # The decoding loop runs its own forward (with the KV cache), not the
        # compiled module.
        raise ConfigError(f"{shown('pytorch.compile')} is not supported with "
                          f"exp.phase=generate yet; use pytorch.compile=false")


FRAMEWORK = FrameworkInfo(
    id="pytorch",
    title="PyTorch",
    module="dlbench.backends.pytorch",
    requires=("torch",),
    install_hint="pip install torch",
    data_parallel="torchrun",
    phases=("training", "inference", "train_to_accuracy", "generate"),
    # torch.profiler in the worker; nsys and ncu wrap the worker, which opens their
    # window with cudaProfilerStart/Stop.
    profilers=("torch", "nsys", "ncu"),
    description="PyTorch eager (optionally torch.compile) on CPU or CUDA.",
    devices="dlbench.backends.pytorch:available_devices",
    # every model whose zoo entry names a pytorch builder (dlbench.config.zoo)
    builders=zoo_builders("pytorch"),
    check=check,
    params=(
        THREADS.param("pytorch.num_threads",
                      "Intra-op CPU threads (torch.set_num_threads); 0 keeps PyTorch's default."),
        Param("pytorch.channels_last", "bool", AUTO,
              "Use the channels-last memory format (NHWC) for 4-D inputs and the model; "
              "`auto`: on for image models on CUDA, off on the CPU (PyTorch's practice). "
              "The layout run is recorded as sys.layout.", special=(AUTO,)),
        COMPILE.param("pytorch.compile",
                      "Compile the model with torch.compile (compilation happens during "
                      "warm-up)."),
        Param("pytorch.compile_mode", "str", "default", "Mode passed to torch.compile.",
              choices=("default", "reduce-overhead", "max-autotune")),
        Param("pytorch.cudnn_benchmark", "bool", True,
              "Let cuDNN pick the fastest convolution algorithms (CUDA only)."),
        SEED.param("pytorch.seed",
                   "Seed of the initial weights and of the synthetic data (torch.manual_seed)."),
        Param("pytorch.generate_cache", "bool", True,
              "exp.phase=generate: decode with a cache of each layer's keys and values "
              "(GPT-2) or the recurrent state (LSTM); false: run the whole sequence so far "
              "again for every token, as a model without a cache must."),
        OPTIMIZER.param("pytorch.optimizer",
                        "Optimizer of the training phase: `sgd` (momentum 0.9) or `adam`."),
        DOCKER_IMAGE.param("pytorch.docker_image",
                           "Container image of the worker with exp.docker=true when "
                           "exp.docker_image is empty.",
                           default="pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"),
    ),
)

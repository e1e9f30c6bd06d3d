"""ONNX Runtime's declaration; its backend is
:mod:`dlbench.backends.onnxruntime`. What it can run: docs/onnxruntime.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlbench.config.frameworks.base import FrameworkInfo, Shown
from dlbench.config.params import INTER_OP_THREADS, SEED, THREADS, Param
from dlbench.errors import ConfigError

#: Execution providers the onnxruntime backend knows how to place (CPU first, then
#: the two that run on an NVIDIA GPU); `dlbench plan` refuses other names.
ONNXRUNTIME_PROVIDERS = ("CPUExecutionProvider", "CUDAExecutionProvider",
                         "TensorrtExecutionProvider")


def check(values: Mapping[str, Any], shown: Shown) -> None:
    """Real data is not read, and onnxruntime.providers names known providers whose
    first one runs where exp.gpus says."""
    if values["exp.data_dir"]:
        raise ConfigError(f"{shown('exp.data_dir')}: framework onnxruntime runs on "
                          f"synthetic data only; leave exp.data_dir empty")
    providers = [name.strip() for name in str(values["onnxruntime.providers"]).split(",")]
    known = ", ".join(ONNXRUNTIME_PROVIDERS)
    for name in providers if providers != ["auto"] else []:
        if name not in ONNXRUNTIME_PROVIDERS:
            raise ConfigError(f"{shown('onnxruntime.providers')}: unknown provider {name!r}; "
                              f"use auto or a comma-separated list of {known}")
    if providers != ["auto"] and (providers[0] != ONNXRUNTIME_PROVIDERS[0]) != bool(
            values["exp.gpus"]):
        raise ConfigError(f"{shown('onnxruntime.providers')} does not fit "
                          f"{shown('exp.gpus')}: the first provider runs the model, on the "
                          f"CPU for CPUExecutionProvider, else on the GPU of exp.gpus")


_DEFAULT = "0: ONNX Runtime's default"

FRAMEWORK = FrameworkInfo(
    id="onnxruntime",
    title="ONNX Runtime",
    module="dlbench.backends.onnxruntime",
    requires=("onnxruntime", "onnx", "onnxscript", "torch"),
    install_hint="pip install dlbench[onnxruntime]",
    phases=("inference",),
    description="ONNX Runtime on the model exported from its PyTorch definition.",
    # Each exported and run, its outputs compared with PyTorch's
    # (docs/onnxruntime.md); the export is the PyTorch model's, so any other
    # model that exports runs too, once checked and added here.
    models=(
        "toy", "deep_mnist", "alexnet", "resnet18", "resnet34", "resnet50",
        "resnet101", "resnet152", "alexnet_owt", "overfeat", "googlenet",
        "inception3", "inception4", "vgg11", "vgg13", "vgg16", "vgg19", "resnet200",
        "resnet269", "mobilenet_v2", "vit_b16", "acoustic_model", "bert_base",
        "gpt2_small", "wlm", "translator", "dcgan", "vae", "ncf", "espcn",
        "fast_style", "ssd_lite", "toy_reg", "toy_lstm", "cart",
    ),
    dtypes=("float32", "float16"),
    dtype_note="ONNX Runtime's CPU provider has no bfloat16 kernels",
    check=check,
    devices="dlbench.backends.onnxruntime:available_devices",
    params=(
        Param("onnxruntime.providers", "str", "auto",
              "Execution providers in priority order, comma-separated (" +
              ", ".join(ONNXRUNTIME_PROVIDERS) + "); the first one says where the model runs "
              "and must match exp.gpus. `auto`: CPUExecutionProvider, or "
              "CUDAExecutionProvider on the GPU of exp.gpus."),
        THREADS.param("onnxruntime.intra_op_threads",
                      "Threads that parallelise one operator "
                      "(SessionOptions.intra_op_num_threads); 0 keeps ONNX Runtime's default.",
                      minimum_note=_DEFAULT),
        INTER_OP_THREADS.param("onnxruntime.inter_op_threads",
                               "Threads that run independent operators at once "
                               "(inter_op_num_threads); used with "
                               "onnxruntime.execution_mode=parallel only; 0 keeps the default.",
                               minimum_note=_DEFAULT),
        Param("onnxruntime.execution_mode", "str", "sequential",
              "Run the graph's operators one after another, or independent ones in parallel.",
              choices=("sequential", "parallel")),
        Param("onnxruntime.graph_optimization", "str", "all",
              "Graph optimization level of the session: `disable`, `basic` (constant folding, "
              "redundant nodes), `extended` (fusions) or `all` (with layout changes).",
              choices=("disable", "basic", "extended", "all")),
        SEED.param("onnxruntime.seed",
                   "Seed of the exported weights (the same weights as pytorch.seed gives the "
                   "PyTorch model) and of the synthetic inputs."),
        Param("onnxruntime.export_cache", "bool", True,
              "Reuse the model exported earlier for the same model, input shape, dtype, seed "
              "and versions (in $DLBENCH_HOME/onnx, else ~/.dlbench/onnx); false: "
              "export again.", identity=False),
    ),
)

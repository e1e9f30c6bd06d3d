"""PyTorch's declaration; its backend is :mod:`dlbench.backends.pytorch`."""

from __future__ import annotations

from dlbench.config.frameworks.base import FrameworkInfo
from dlbench.config.params import COMPILE, DOCKER_IMAGE, OPTIMIZER, SEED, THREADS, Param

#: Where its builders live (dlbench.models.pytorch).
_M = "dlbench.models.pytorch."

FRAMEWORK = FrameworkInfo(
    id="pytorch",
    title="PyTorch",
    module="dlbench.backends.pytorch",
    requires=("torch",),
    install_hint="pip install torch",
    data_parallel="torchrun",
    description="PyTorch eager (optionally torch.compile) on CPU or CUDA.",
    devices="dlbench.backends.pytorch:available_devices",
    builders={
        "toy": _M + "simple:toy",
        "deep_mnist": _M + "simple:deep_mnist",
        "alexnet": _M + "alexnet:alexnet",
        "resnet18": _M + "resnet:resnet18",
        "resnet34": _M + "resnet:resnet34",
        "resnet50": _M + "resnet:resnet50",
        "resnet101": _M + "resnet:resnet101",
        "resnet152": _M + "resnet:resnet152",
        "alexnet_owt": _M + "dlbs_classics:alexnet_owt",
        "overfeat": _M + "dlbs_classics:overfeat",
        "googlenet": _M + "inception:googlenet",
        "inception3": _M + "inception:inception3",
        "inception4": _M + "inception4:inception4",
        "vgg11": _M + "vgg:vgg11",
        "vgg13": _M + "vgg:vgg13",
        "vgg16": _M + "vgg:vgg16",
        "vgg19": _M + "vgg:vgg19",
        "resnet200": _M + "resnet:resnet200",
        "resnet269": _M + "resnet:resnet269",
        "mobilenet_v2": _M + "mobile:mobilenet_v2",
        "vit_b16": _M + "vit:vit_b16",
        "acoustic_model": _M + "dlbs_classics:acoustic_model",
        "bert_base": _M + "lm:bert_base",
        "gpt2_small": _M + "lm:gpt2_small",
        "wlm": _M + "lm:wlm",
        "translator": _M + "translation:translator",
        "dcgan": _M + "generative:dcgan",
        "vae": _M + "generative:vae",
        "ncf": _M + "recsys_toys:ncf",
        "espcn": _M + "imaging:espcn",
        "fast_style": _M + "imaging:fast_style",
        "ssd_lite": _M + "detection:ssd_lite",
        "toy_reg": _M + "recsys_toys:toy_reg",
        "toy_lstm": _M + "recsys_toys:toy_lstm",
        "cart": _M + "cartpole:cart",
        "loader": _M + "workload_base:no_model",
    },
    params=(
        THREADS.param("pytorch.num_threads",
                      "Intra-op CPU threads (torch.set_num_threads); 0 keeps PyTorch's default."),
        Param("pytorch.channels_last", "bool", False,
              "Use the channels-last memory format for 4-D inputs and the model."),
        COMPILE.param("pytorch.compile",
                      "Compile the model with torch.compile (compilation happens during "
                      "warm-up)."),
        Param("pytorch.compile_mode", "str", "default", "Mode passed to torch.compile.",
              choices=("default", "reduce-overhead", "max-autotune")),
        Param("pytorch.cudnn_benchmark", "bool", True,
              "Let cuDNN pick the fastest convolution algorithms (CUDA only)."),
        SEED.param("pytorch.seed",
                   "Seed of the initial weights and of the synthetic data (torch.manual_seed)."),
        OPTIMIZER.param("pytorch.optimizer",
                        "Optimizer of the training phase: `sgd` (momentum 0.9) or `adam`."),
        DOCKER_IMAGE.param("pytorch.docker_image",
                           "Container image of the worker with exp.docker=true when "
                           "exp.docker_image is empty.",
                           default="pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"),
    ),
)

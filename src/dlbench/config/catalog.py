"""What exists: the frameworks and models dlbench knows, as plain data.

The catalog lives at the bottom of the import graph so that planning a sweep (which
must reject an unknown model or a framework that is not installed) never imports a
framework. How a model is built and how a framework runs a step live in
``dlbench.models`` and ``dlbench.backends``; they look their metadata up here.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from dlbench.config.modelinfo import ModelInfo
from dlbench.config.zoo_domains import DOMAIN_MODELS
from dlbench.config.zoo_vision import VISION_MODELS


@dataclass(frozen=True)
class FrameworkInfo:
    """A backend: which module implements it and what it needs installed."""

    id: str
    title: str
    module: str  # implements dlbench.backends.base.Backend; imported only in the worker
    requires: tuple[str, ...]  # importable top-level packages it needs
    install_hint: str  # what to run when a requirement is missing
    phases: tuple[str, ...] = ("training", "inference")
    description: str = ""
    # Models this framework defines; None: every model of the catalog.
    models: tuple[str, ...] | None = None
    # How several replicas (exp.num_replicas > 1) run: "torchrun" starts one worker
    # process per replica; "in_process" lets one worker drive every local device (JAX's
    # sharding, TensorFlow's MirroredStrategy); "none" refuses more than one replica.
    data_parallel: str = "none"

    def missing_requirements(self) -> list[str]:
        """Names of required packages that cannot be imported here (checked without importing)."""
        return [name for name in self.requires if importlib.util.find_spec(name) is None]


FRAMEWORKS: dict[str, FrameworkInfo] = {
    info.id: info
    for info in (
        FrameworkInfo(
            id="pytorch",
            title="PyTorch",
            module="dlbench.backends.pytorch",
            requires=("torch",),
            install_hint="pip install torch",
            data_parallel="torchrun",
            description="PyTorch eager (optionally torch.compile) on CPU or CUDA.",
        ),
        FrameworkInfo(
            id="jax",
            title="JAX (Flax, Optax)",
            module="dlbench.backends.jax_backend",
            requires=("jax", "flax", "optax"),
            install_hint="pip install dlbench[jax]",
            description="JAX with Flax models and Optax optimizers; jit-compiled steps.",
            models=("toy", "deep_mnist", "alexnet_owt", "vgg16", "resnet18", "resnet50",
                    "bert_base", "gpt2_small"),
            data_parallel="in_process",
        ),
        FrameworkInfo(
            id="onnxruntime",
            title="ONNX Runtime",
            module="dlbench.backends.onnxruntime_backend",
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
        ),
        FrameworkInfo(
            id="tensorflow",
            title="TensorFlow (Keras 3)",
            module="dlbench.backends.tensorflow_backend",
            requires=("tensorflow", "keras"),
            install_hint="pip install dlbench[tensorflow]",
            description="TensorFlow with Keras 3 models; tf.function-compiled steps.",
            models=("toy", "deep_mnist", "alexnet_owt", "vgg16", "resnet18", "resnet50",
                    "bert_base", "gpt2_small"),
            data_parallel="in_process",
        ),
        FrameworkInfo(
            id="fake",
            title="Fake workload",
            module="dlbench.backends.fake",
            requires=(),
            install_hint="",
            data_parallel="torchrun",
            description=(
                "A known-answer workload: each step takes fake.step_ms (plus jitter), "
                "timed through the same loop as real frameworks. For tests and for "
                "checking the harness itself."
            ),
        ),
    )
}


# The models of the core: tests and DLBS's first image models. The vision zoo and the
# multi-domain suite live beside this file, one module each.
_CORE_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo(
        id="toy",
        title="Toy MLP",
        domain="test",
        input_shape=(64,),
        num_classes=10,
        default_batch=32,
        is_image=False,
        description="Two-layer perceptron on 64 features; milliseconds per step, for tests.",
    ),
    ModelInfo(
        id="deep_mnist",
        title="DeepMNIST",
        domain="image classification",
        unit="images/s",
        input_shape=(1, 28, 28),
        num_classes=10,
        default_batch=64,
        reference_params=3_274_634,
        min_image_size=4,  # two 2x2 max pools
        description="TensorFlow's 'Deep MNIST' CNN: two 5x5 conv+pool blocks, fc 1024, fc 10.",
    ),
    ModelInfo(
        id="alexnet",
        title="AlexNet",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 227, 227),
        num_classes=1000,
        default_batch=64,
        reference_params=60_965_224,
        # the last 3x3/2 pool (ceil mode) needs 2 pixels, which conv1 11x11/4 and the
        # two pools before it leave from 39 px up
        min_image_size=39,
        description="AlexNet as in Caffe's bvlc_alexnet: grouped convolutions and LRN.",
    ),
    ModelInfo(
        id="resnet18",
        title="ResNet-18",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 224, 224),
        num_classes=1000,
        default_batch=64,
        reference_params=11_689_512,
        description="ResNet-18 (basic blocks), as in torchvision.",
    ),
    ModelInfo(
        id="resnet34",
        title="ResNet-34",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 224, 224),
        num_classes=1000,
        default_batch=64,
        reference_params=21_797_672,
        description="ResNet-34 (basic blocks), as in torchvision.",
    ),
    ModelInfo(
        id="resnet50",
        title="ResNet-50",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 224, 224),
        num_classes=1000,
        default_batch=64,
        reference_params=25_557_032,
        description="ResNet-50 v1.5 (stride in the 3x3 convolution), as in torchvision.",
    ),
    ModelInfo(
        id="resnet101",
        title="ResNet-101",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 224, 224),
        num_classes=1000,
        default_batch=64,
        reference_params=44_549_160,
        description="ResNet-101 v1.5, as in torchvision.",
    ),
    ModelInfo(
        id="resnet152",
        title="ResNet-152",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 224, 224),
        num_classes=1000,
        default_batch=64,
        reference_params=60_192_808,
        description="ResNet-152 v1.5, as in torchvision.",
    ),
)

MODELS: dict[str, ModelInfo] = {
    info.id: info
    for info in (
        *_CORE_MODELS,
        *VISION_MODELS,
        *DOMAIN_MODELS,
    )
}



def model_input_shape(model: ModelInfo, image_size: int) -> tuple[int, ...]:
    """One sample's input shape, with the image side replaced when ``image_size`` > 0."""
    if model.is_image and image_size > 0:
        return (*model.input_shape[:-2], image_size, image_size)
    return model.input_shape

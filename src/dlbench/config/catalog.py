"""What exists: the frameworks and models dlbench knows, as plain data.

Each framework declares itself in a module of :mod:`dlbench.config.frameworks`;
this module gathers them by id. Models are entries here and in the zoo modules beside
it; a plug-in adds one with ``dlbench.config.registry.register_model``
(:func:`add_model`), which also puts its builders in the frameworks' tables.

The catalog lives at the bottom of the import graph so that planning a sweep (which
must reject an unknown model or a framework that is not installed) never imports a
framework. How a model is built and how a framework runs a step live in
``dlbench.models`` and ``dlbench.backends``; they look their metadata up here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from dlbench.config.frameworks import DECLARATIONS
from dlbench.config.frameworks.base import FrameworkInfo
from dlbench.config.modelinfo import ModelInfo
from dlbench.config.zoo_domains import DOMAIN_MODELS
from dlbench.config.zoo_vision import VISION_MODELS

__all__ = ["FRAMEWORKS", "MODELS", "FrameworkInfo", "ModelInfo", "add_model",
           "model_frameworks", "model_input_shape", "remove_model"]

#: The frameworks, by id, from their declarations (:mod:`dlbench.config.frameworks`).
FRAMEWORKS: dict[str, FrameworkInfo] = {info.id: info for info in DECLARATIONS}


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
    """One sample's input shape, with the image side replaced when ``image_size`` > 0
    (:meth:`ModelInfo.sample_shape` without a sequence length)."""
    return model.sample_shape(image_size)


def model_frameworks(model_id: str) -> list[str]:
    """The frameworks that define ``model_id``, from their declarations' builder tables
    (or model lists), in the order of :data:`FRAMEWORKS`.

    >>> model_frameworks("toy")[:2]
    ['pytorch', 'jax']
    """
    return [info.id for info in FRAMEWORKS.values() if info.defines(model_id)]


def add_model(info: ModelInfo, builders: Mapping[str, str]) -> None:
    """Add ``info`` to :data:`MODELS` and each ``{framework id: "module:function"}`` of
    ``builders`` to that framework's builder table (a copy of its declaration in
    :data:`FRAMEWORKS`; the declaration module is left alone). ValueError when the id
    is taken, a framework is unknown, or a framework lists its models instead of
    building them (ONNX Runtime). Use ``dlbench.config.registry.register_model``, which
    also makes the id a choice of exp.model."""
    if info.id in MODELS:
        raise ValueError(f"model {info.id} is already in the catalog")
    for framework, path in builders.items():
        declared = FRAMEWORKS.get(framework)
        if declared is None:
            raise ValueError(f"model {info.id}: unknown framework {framework!r}; known: "
                             f"{', '.join(FRAMEWORKS)}")
        if not declared.builders:
            raise ValueError(f"model {info.id}: framework {framework} has no builder table")
        if ":" not in path:
            raise ValueError(f"model {info.id}: builder {path!r} is not module:function")
    MODELS[info.id] = info
    for framework, path in builders.items():
        declared = FRAMEWORKS[framework]
        # models=None: the declaration derives the models it defines from its table again
        FRAMEWORKS[framework] = replace(
            declared, builders={**declared.builders, info.id: path}, models=None)


def remove_model(model_id: str) -> None:
    """Undo :func:`add_model`: the model and its builder lines are gone; a framework
    whose table is its declaration's again gets its declaration back."""
    del MODELS[model_id]
    originals = {info.id: info for info in DECLARATIONS}
    for framework, declared in list(FRAMEWORKS.items()):
        if model_id not in declared.builders:
            continue
        table = {k: v for k, v in declared.builders.items() if k != model_id}
        original = originals.get(framework)
        FRAMEWORKS[framework] = (
            original if original is not None and dict(original.builders) == table
            else replace(declared, builders=table, models=None))

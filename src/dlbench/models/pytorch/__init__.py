"""PyTorch implementations of the zoo, in plain ``torch.nn`` (no torchvision).

Each builder takes one sample's shape and the number of classes and returns a fresh
module. Add a model by writing its builder and one line in :data:`PYTORCH_BUILDERS`;
give it a catalog entry (``dlbench.config.catalog.MODELS``) to make it selectable.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from dlbench.models.pytorch.alexnet import alexnet
from dlbench.models.pytorch.resnet import resnet18, resnet34, resnet50, resnet101, resnet152
from dlbench.models.pytorch.simple import deep_mnist, toy

# builder(input_shape, num_classes) -> module; input_shape is one sample's shape
ModelBuilder = Callable[[tuple[int, ...], int], nn.Module]

PYTORCH_BUILDERS: dict[str, ModelBuilder] = {
    "toy": toy,
    "deep_mnist": deep_mnist,
    "alexnet": alexnet,
    "resnet18": resnet18,
    "resnet34": resnet34,
    "resnet50": resnet50,
    "resnet101": resnet101,
    "resnet152": resnet152,
}

__all__ = ["PYTORCH_BUILDERS", "ModelBuilder"]

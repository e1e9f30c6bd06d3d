"""PyTorch implementations of the zoo, in plain ``torch.nn`` (no torchvision).

Each builder takes one sample's shape and the number of classes and returns a fresh
module. Add a model by writing its builder and one line in the builder table of
PyTorch's declaration (``dlbench.config.frameworks.pytorch``); give it a catalog
entry (``dlbench.config.catalog.MODELS``) to make it selectable.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from dlbench.config.frameworks.pytorch import FRAMEWORK
from dlbench.models.builders import load_builders

# builder(input_shape, num_classes) -> module; input_shape is one sample's shape
ModelBuilder = Callable[[tuple[int, ...], int], nn.Module]

#: Model id -> builder, from PyTorch's declaration (dlbench.config.frameworks.pytorch).
PYTORCH_BUILDERS: dict[str, ModelBuilder] = load_builders(FRAMEWORK.builders)

__all__ = ["PYTORCH_BUILDERS", "ModelBuilder"]

"""The model zoo: builders per framework, looked up by the model ids of the catalog.

A model's metadata (input shape, classes, published parameter count) lives in
``dlbench.config.catalog``; this package only builds models. Importing it does not
import any framework: the runner may import it to plan, and only the worker, which
calls a builder, pays for importing torch. The builder tables and the input checks are
in :mod:`dlbench.models.builders`, PyTorch's entry in :mod:`dlbench.models.build_pytorch`.
"""

from __future__ import annotations

from dlbench.models.build_pytorch import build_pytorch_model
from dlbench.models.builders import (
    MIN_IMAGE_SIZE,
    ImageTooSmall,
    check_input_shape,
    load_builders,
    model_builder,
)

__all__ = [
    "MIN_IMAGE_SIZE", "ImageTooSmall", "build_pytorch_model", "check_input_shape",
    "load_builders", "model_builder",
]

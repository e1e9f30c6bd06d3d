"""PyTorch models built on the ``meta`` device: parameter counts and shapes without
allocating or initialising storage."""

from __future__ import annotations

import torch
from torch import nn

from dlbench.config.catalog import MODELS, model_input_shape
from dlbench.models import build_pytorch_model


def count_params(model: nn.Module) -> int:
    """The number of parameters of ``model``."""
    return sum(p.numel() for p in model.parameters())


def build_on_meta(model_id: str, image_size: int = 0, num_classes: int | None = None) -> nn.Module:
    """``model_id`` as the worker builds it (``image_size`` 0: the published size; the
    catalog's classes unless ``num_classes``), on the meta device."""
    info = MODELS[model_id]
    with torch.device("meta"):
        return build_pytorch_model(
            model_id, model_input_shape(info, image_size), num_classes or info.num_classes
        )

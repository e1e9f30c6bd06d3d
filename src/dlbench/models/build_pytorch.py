"""Build a PyTorch model of the zoo by id, from a module that does not import torch
until it is called (the planner may import it).

Example::

    from dlbench.config.catalog import MODELS, model_input_shape
    from dlbench.models import build_pytorch_model

    info = MODELS["resnet50"]
    model = build_pytorch_model(info.id, model_input_shape(info, 112), info.num_classes)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlbench.models.builders import model_builder

if TYPE_CHECKING:
    from torch import nn

__all__ = ["build_pytorch_model"]


def build_pytorch_model(model_id: str, input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """Build the PyTorch module of ``model_id`` for samples of ``input_shape``.

    ``input_shape`` is one sample's shape, as ``model_input_shape`` gives it; the
    module maps a float batch ``(N, *input_shape)`` to logits ``(N, num_classes)``.
    Parameters are freshly initialised on the default device (CPU unless a
    ``torch.device`` context says otherwise). Raises :class:`KeyError` for an id
    without a PyTorch builder (a bug: the planner validates ids) and
    :class:`ImageTooSmall` when the image side is below :data:`MIN_IMAGE_SIZE`.

    Example: ``build_pytorch_model("toy", (64,), 10)(torch.zeros(2, 64))`` has shape
    ``(2, 10)``.
    """
    # Imported here so that importing dlbench.models never imports torch.
    from dlbench.models.pytorch import PYTORCH_BUILDERS

    return model_builder(PYTORCH_BUILDERS, "PyTorch", model_id, input_shape)(
        input_shape, num_classes)

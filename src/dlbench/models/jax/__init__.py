"""Flax implementations of part of the zoo, for ``exp.framework=jax``.

Each builder takes one sample's shape as the catalog gives it (channels first for
images, as in PyTorch), the number of classes and the compute dtype, and returns a
Flax module whose ``__call__(x, train)`` maps a batch to logits. Images are NHWC,
JAX's natural layout: :func:`jax_sample_shape` turns the catalog's ``(C, H, W)`` into
``(H, W, C)``. The same model id is the same architecture as in
``dlbench.models.pytorch``, with the same parameter count at every size.

Example::

    import jax, jax.numpy as jnp
    from dlbench.models.jax import build_jax_model

    model = build_jax_model("resnet18", (3, 64, 64), 1000, jnp.float32)
    variables = model.init(jax.random.key(0), jnp.zeros((2, 64, 64, 3)))
    model.apply(variables, jnp.zeros((2, 64, 64, 3))).shape  # (2, 1000)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flax import linen as nn

from dlbench.config.frameworks.jax import FRAMEWORK
from dlbench.models.builders import load_builders, model_builder

# builder(input_shape, num_classes, dtype) -> module; input_shape as the catalog has it
JaxModelBuilder = Callable[[tuple[int, ...], int, Any], nn.Module]

#: Model id -> builder, from the declaration (dlbench.config.frameworks.jax).
JAX_BUILDERS: dict[str, JaxModelBuilder] = load_builders(FRAMEWORK.builders)


def jax_sample_shape(input_shape: tuple[int, ...], is_image: bool) -> tuple[int, ...]:
    """One sample's shape in the layout the Flax models take: ``(H, W, C)`` for an image
    given as ``(C, H, W)``; other shapes unchanged."""
    if is_image and len(input_shape) == 3:
        channels, height, width = input_shape
        return (height, width, channels)
    return input_shape


def build_jax_model(
    model_id: str, input_shape: tuple[int, ...], num_classes: int, dtype: Any
) -> nn.Module:
    """The Flax module of ``model_id`` for samples of ``input_shape`` (the catalog's
    layout), computing in ``dtype`` with float32 parameters. Raises :class:`KeyError`
    for an id without a JAX builder (a bug: the planner refuses such models) and
    :class:`dlbench.models.ImageTooSmall` when the image side is too small."""
    builder = model_builder(JAX_BUILDERS, "JAX", model_id, input_shape)
    return builder(input_shape, num_classes, dtype)


__all__ = ["JAX_BUILDERS", "JaxModelBuilder", "build_jax_model", "jax_sample_shape"]

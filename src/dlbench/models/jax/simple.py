"""Small models in Flax: the toy perceptron and TensorFlow's Deep MNIST CNN, as
``dlbench.models.pytorch.simple`` defines them."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from dlbench.models.jax.layers import (
    adaptive_avg_pool,
    compact,
    max_pool,
    torch_conv,
    torch_dense,
)


class Toy(nn.Module):  # type: ignore[misc]  # flax is not type-checked (see pyproject)
    """Two-layer perceptron: ``(features,)`` → 128 → ``num_classes``."""

    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for features ``(N, F)``."""
        x = nn.relu(torch_dense(128, x.shape[-1], self.dtype)(x))
        return torch_dense(self.num_classes, 128, self.dtype)(x)


class DeepMNIST(nn.Module):  # type: ignore[misc]
    """Two 5x5 'same' convolutions (32, 64) with ReLU and 2x2 max pool, an adaptive 7x7
    average pool (the identity at 28 px), fc 1024 with ReLU and dropout 0.5, fc
    ``num_classes``: 3,274,634 parameters for one channel and 10 classes."""

    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for images ``(N, H, W, C)``."""
        x = nn.relu(torch_conv(32, 5, x.shape[-1], self.dtype, padding=2)(x))
        x = max_pool(x, 2, 2)
        x = nn.relu(torch_conv(64, 5, 32, self.dtype, padding=2)(x))
        x = max_pool(x, 2, 2)
        x = adaptive_avg_pool(x, (7, 7)).reshape(x.shape[0], -1)
        x = nn.relu(torch_dense(1024, 64 * 7 * 7, self.dtype)(x))
        x = nn.Dropout(0.5, deterministic=not train)(x)
        return torch_dense(self.num_classes, 1024, self.dtype)(x)


def toy(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """The toy perceptron for ``(features,)`` samples."""
    return Toy(num_classes, dtype)


def deep_mnist(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """Deep MNIST for ``(C, H, W)`` samples (the channels come from the input)."""
    return DeepMNIST(num_classes, dtype)

"""DLBS's classics in Flax: both AlexNets, OverFeat, the acoustic model and VGG-11, -13,
-16 and -19, as ``dlbench.models.pytorch.alexnet``, ``dlbs_classics`` and ``vgg`` define
them (NHWC instead of NCHW; the same layers, widths and parameter counts; VGG's
configurations from ``dlbench.models.layouts``)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from dlbench.models.jax.layers import (
    adaptive_avg_pool,
    compact,
    kaiming_fan_out,
    local_response_norm,
    max_pool,
    normal_init,
    torch_conv,
    torch_dense,
)
from dlbench.models.layouts import VGG_CONFIGS


class FlaxAlexNetOWT(nn.Module):  # type: ignore[misc]  # flax is not type-checked (see pyproject)
    """64 11x11/4, 192 5x5, 384, 256, 256 3x3 convolutions with ReLU, three 3x3/2 max
    pools, an adaptive 6x6 average pool (the identity at 224 px), dropout, fc 4096,
    dropout, fc 4096, fc ``num_classes``: 61,100,840 parameters at 3 channels, 1000
    classes."""

    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for images ``(N, H, W, C)``."""
        d = self.dtype
        x = nn.relu(torch_conv(64, 11, x.shape[-1], d, stride=4, padding=2)(x))
        x = max_pool(x, 3, 2)
        x = nn.relu(torch_conv(192, 5, 64, d, padding=2)(x))
        x = max_pool(x, 3, 2)
        x = nn.relu(torch_conv(384, 3, 192, d, padding=1)(x))
        x = nn.relu(torch_conv(256, 3, 384, d, padding=1)(x))
        x = nn.relu(torch_conv(256, 3, 256, d, padding=1)(x))
        x = max_pool(x, 3, 2)
        x = adaptive_avg_pool(x, (6, 6)).reshape(x.shape[0], -1)
        x = nn.Dropout(0.5, deterministic=not train)(x)
        x = nn.relu(torch_dense(4096, 256 * 6 * 6, d)(x))
        x = nn.Dropout(0.5, deterministic=not train)(x)
        x = nn.relu(torch_dense(4096, 4096, d)(x))
        return torch_dense(self.num_classes, 4096, d)(x)


def fc_head(x: Any, hidden1: int, hidden2: int, num_classes: int, train: bool,
            dtype: Any) -> Any:
    """The classifier of AlexNet and OverFeat (PyTorch's ``fc_head``) on flattened
    features: fc6, fc7 (each ReLU then dropout 0.5) and the class layer."""
    x = nn.relu(torch_dense(hidden1, x.shape[-1], dtype)(x))
    x = nn.Dropout(0.5, deterministic=not train)(x)
    x = nn.relu(torch_dense(hidden2, hidden1, dtype)(x))
    x = nn.Dropout(0.5, deterministic=not train)(x)
    return torch_dense(num_classes, hidden2, dtype)(x)


class FlaxAlexNet(nn.Module):  # type: ignore[misc]
    """Caffe's bvlc_alexnet: 96 11x11/4, 256 5x5 (two groups), 384 3x3, 384 and 256 3x3
    (two groups) convolutions with ReLU, LRN after the first two, 3x3/2 max pools
    rounding up, an adaptive 6x6 average pool, fc 4096, fc 4096, fc ``num_classes``."""

    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for images ``(N, H, W, C)``."""
        d = self.dtype
        x = nn.relu(torch_conv(96, 11, x.shape[-1], d, stride=4)(x))
        x = max_pool(local_response_norm(x), 3, 2, ceil=True)
        x = nn.relu(torch_conv(256, 5, 96, d, padding=2, groups=2)(x))
        x = max_pool(local_response_norm(x), 3, 2, ceil=True)
        x = nn.relu(torch_conv(384, 3, 256, d, padding=1)(x))
        x = nn.relu(torch_conv(384, 3, 384, d, padding=1, groups=2)(x))
        x = nn.relu(torch_conv(256, 3, 384, d, padding=1, groups=2)(x))
        x = max_pool(x, 3, 2, ceil=True)
        x = adaptive_avg_pool(x, (6, 6)).reshape(x.shape[0], -1)
        return fc_head(x, 4096, 4096, self.num_classes, train, d)


class FlaxOverFeat(nn.Module):  # type: ignore[misc]
    """OverFeat's fast model: 96 11x11/4, 256 5x5, 512, 1024, 1024 3x3 convolutions with
    ReLU, 2x2 max pools after the first, second and fifth, an adaptive 6x6 average
    pool, fc 3072, fc 4096, fc ``num_classes``."""

    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for images ``(N, H, W, C)``."""
        d = self.dtype
        x = max_pool(nn.relu(torch_conv(96, 11, x.shape[-1], d, stride=4)(x)), 2, 2)
        x = max_pool(nn.relu(torch_conv(256, 5, 96, d)(x)), 2, 2)
        x = nn.relu(torch_conv(512, 3, 256, d, padding=1)(x))
        x = nn.relu(torch_conv(1024, 3, 512, d, padding=1)(x))
        x = max_pool(nn.relu(torch_conv(1024, 3, 1024, d, padding=1)(x)), 2, 2)
        x = adaptive_avg_pool(x, (6, 6)).reshape(x.shape[0], -1)
        return fc_head(x, 3072, 4096, self.num_classes, train, d)


class AcousticModel(nn.Module):  # type: ignore[misc]
    """Five fully connected layers of 2048 with ReLU, a linear output of
    ``num_classes`` states."""

    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for features ``(N, F)``."""
        for _ in range(5):
            x = nn.relu(torch_dense(2048, x.shape[-1], self.dtype)(x))
        return torch_dense(self.num_classes, 2048, self.dtype)(x)


class FlaxVGG(nn.Module):  # type: ignore[misc]
    """3x3 convolutions with bias and ReLU, 2x2 max pools, an adaptive 7x7 average pool
    (the identity at 224 px), fc 4096, fc 4096 (each with ReLU and dropout 0.5), fc
    ``num_classes``; torchvision's initialisation."""

    config: str
    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for images ``(N, H, W, C)``."""
        for item in self.config.split():
            if item == "M":
                x = max_pool(x, 2, 2)
            else:
                x = nn.relu(nn.Conv(
                    int(item), (3, 3), padding=((1, 1), (1, 1)), dtype=self.dtype,
                    param_dtype=jnp.float32, kernel_init=kaiming_fan_out,
                    bias_init=nn.initializers.zeros,
                )(x))
        x = adaptive_avg_pool(x, (7, 7)).reshape(x.shape[0], -1)
        linear = normal_init(0.01)
        for _ in range(2):
            x = nn.relu(nn.Dense(4096, dtype=self.dtype, param_dtype=jnp.float32,
                                 kernel_init=linear)(x))
            x = nn.Dropout(0.5, deterministic=not train)(x)
        return nn.Dense(self.num_classes, dtype=self.dtype, param_dtype=jnp.float32,
                        kernel_init=linear)(x)


def alexnet_owt(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """AlexNet "one weird trick" for ``(C, H, W)`` samples."""
    return FlaxAlexNetOWT(num_classes, dtype)


def vgg11(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """VGG-11 (configuration A): 132,863,336 parameters at 3 channels, 1000 classes."""
    return FlaxVGG(VGG_CONFIGS["vgg11"], num_classes, dtype)


def vgg13(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """VGG-13 (configuration B): 133,047,848 parameters at 3 channels, 1000 classes."""
    return FlaxVGG(VGG_CONFIGS["vgg13"], num_classes, dtype)


def vgg16(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """VGG-16 (configuration D): 138,357,544 parameters at 3 channels, 1000 classes."""
    return FlaxVGG(VGG_CONFIGS["vgg16"], num_classes, dtype)


def vgg19(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """VGG-19 (configuration E): 143,667,240 parameters at 3 channels, 1000 classes."""
    return FlaxVGG(VGG_CONFIGS["vgg19"], num_classes, dtype)


def alexnet(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """Caffe's AlexNet: 60,965,224 parameters at 3 channels, 1000 classes."""
    return FlaxAlexNet(num_classes, dtype)


def overfeat(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """OverFeat (fast): 145,920,872 parameters at 3 channels, 1000 classes."""
    return FlaxOverFeat(num_classes, dtype)


def acoustic_model(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """DLBS's acoustic model on ``(features,)`` samples: 34,678,784 parameters at 540
    features and 8192 states."""
    return AcousticModel(num_classes, dtype)

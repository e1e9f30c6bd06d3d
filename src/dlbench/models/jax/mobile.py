"""MobileNetV2 (width 1.0) in Flax, as ``dlbench.models.pytorch.mobile`` (and
torchvision): inverted residual blocks of ``dlbench.models.layouts.MOBILENET_V2``, a
1x1 expansion, a 3x3 depthwise convolution and a linear 1x1 projection, each without
bias and followed by batch norm, ReLU6 after the first two; a 1x1 convolution to 1280
channels, global average pool, dropout 0.2 and a linear classifier. NHWC layout;
torchvision's initialisation."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from dlbench.models.jax.layers import batch_norm, compact, kaiming_fan_out, normal_init
from dlbench.models.layouts import MOBILENET_V2


def _conv_bn(x: Any, out: int, train: bool, dtype: Any, kernel: int = 1, stride: int = 1,
             groups: int = 1, relu6: bool = True) -> Any:
    """A bias-free convolution (padded by ``kernel // 2``), batch norm, ReLU6; inside a
    compact module's call."""
    pad = kernel // 2
    # Flax's fans of a grouped kernel (k, k, in / groups, out) are torch's.
    x = nn.Conv(out, (kernel, kernel), strides=(stride, stride),
                padding=((pad, pad), (pad, pad)), feature_group_count=groups,
                use_bias=False, dtype=dtype, param_dtype=jnp.float32,
                kernel_init=kaiming_fan_out)(x)
    x = batch_norm(train, dtype)(x)
    return jnp.clip(x, 0.0, 6.0) if relu6 else x


class FlaxMobileNetV2(nn.Module):  # type: ignore[misc]  # flax is not type-checked (see pyproject)
    """Stem 3x3/2 to 32 channels, 17 inverted residual blocks, 1x1 to 1280, classifier."""

    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for images ``(N, H, W, C)``."""
        d = self.dtype
        x = _conv_bn(x, 32, train, d, kernel=3, stride=2)
        for expansion, out, repeats, first_stride in MOBILENET_V2:
            for index in range(repeats):
                stride = first_stride if index == 0 else 1
                channels = x.shape[-1]
                y = _conv_bn(x, channels * expansion, train, d) if expansion != 1 else x
                y = _conv_bn(y, y.shape[-1], train, d, kernel=3, stride=stride,
                             groups=y.shape[-1])
                y = _conv_bn(y, out, train, d, relu6=False)
                x = x + y if stride == 1 and channels == out else y
        x = jnp.mean(_conv_bn(x, 1280, train, d), axis=(1, 2))
        x = nn.Dropout(0.2, deterministic=not train)(x)
        return nn.Dense(self.num_classes, dtype=d, param_dtype=jnp.float32,
                        kernel_init=normal_init(0.01))(x)


def mobilenet_v2(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """MobileNetV2 (width 1.0): 3,504,872 parameters at 3 channels, 1000 classes."""
    return FlaxMobileNetV2(num_classes, dtype)

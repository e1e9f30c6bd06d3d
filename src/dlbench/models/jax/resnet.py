"""ResNet-18 to ResNet-269 (v1.5) in Flax (blocks per stage from
``dlbench.models.layouts.RESNET_STAGES``), as ``dlbench.models.pytorch.resnet`` (and
torchvision) define them: convolutions without bias, batch norm after each, the
stride of a bottleneck in its 3x3 convolution, 1x1 convolution + batch norm shortcuts
where the shape changes. NHWC layout."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from dlbench.models.jax.layers import batch_norm, compact, kaiming_fan_out, max_pool, torch_dense
from dlbench.models.layouts import RESNET_STAGES

_PLANES = (64, 128, 256, 512)  # of each stage's blocks, before their expansion


def _conv(features: int, kernel: int, stride: int, dtype: Any, name: str | None = None) -> nn.Conv:
    pad = kernel // 2
    return nn.Conv(features, (kernel, kernel), strides=(stride, stride),
                   padding=((pad, pad), (pad, pad)), use_bias=False, dtype=dtype,
                   param_dtype=jnp.float32, kernel_init=kaiming_fan_out, name=name)


def _batch_norm(train: bool, dtype: Any, name: str | None = None) -> nn.BatchNorm:
    return batch_norm(train, dtype, name=name)


class FlaxBasicBlock(nn.Module):  # type: ignore[misc]  # flax is not type-checked (see pyproject)
    """Two 3x3 convolutions and a shortcut (ResNet-18 and -34)."""

    planes: int
    stride: int
    downsample: bool
    dtype: Any = jnp.float32
    expansion = 1

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Residual output, ``stride`` times smaller."""
        bn = partial(_batch_norm, train, self.dtype)
        identity = x
        if self.downsample:
            identity = bn()(_conv(self.planes, 1, self.stride, self.dtype)(x))
        out = nn.relu(bn()(_conv(self.planes, 3, self.stride, self.dtype)(x)))
        out = bn()(_conv(self.planes, 3, 1, self.dtype)(out))
        return nn.relu(out + identity)


class FlaxBottleneck(nn.Module):  # type: ignore[misc]
    """1x1 reduce, 3x3 (strided: v1.5), 1x1 expand (x4) and a shortcut (ResNet-50)."""

    planes: int
    stride: int
    downsample: bool
    dtype: Any = jnp.float32
    expansion = 4

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Residual output with ``planes * 4`` channels, ``stride`` times smaller."""
        bn = partial(_batch_norm, train, self.dtype)
        wide = self.planes * self.expansion
        identity = x
        if self.downsample:
            identity = bn()(_conv(wide, 1, self.stride, self.dtype)(x))
        out = nn.relu(bn()(_conv(self.planes, 1, 1, self.dtype)(x)))
        out = nn.relu(bn()(_conv(self.planes, 3, self.stride, self.dtype)(out)))
        out = bn()(_conv(wide, 1, 1, self.dtype)(out))
        return nn.relu(out + identity)


class FlaxResNet(nn.Module):  # type: ignore[misc]
    """Stem (7x7/2 convolution, batch norm, ReLU, 3x3/2 max pool), four stages of 64,
    128, 256 and 512 planes (all but the first halve the resolution), global average
    pool, fc."""

    block: type[FlaxBasicBlock] | type[FlaxBottleneck]
    layers: Sequence[int]
    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for images ``(N, H, W, C)``."""
        x = nn.relu(_batch_norm(train, self.dtype)(_conv(64, 7, 2, self.dtype)(x)))
        x = max_pool(x, 3, 2, padding=1)
        in_planes = 64
        for stage, (planes, blocks) in enumerate(zip(_PLANES, self.layers, strict=True)):
            for index in range(blocks):
                stride = 2 if stage > 0 and index == 0 else 1
                wide = planes * self.block.expansion
                downsample = index == 0 and (stride != 1 or in_planes != wide)
                x = self.block(planes, stride, downsample, self.dtype)(x, train)
                in_planes = wide
        # AdaptiveAvgPool2d((1, 1)): any image size reaches the same fc.
        x = jnp.mean(x, axis=(1, 2))
        return torch_dense(self.num_classes, in_planes, self.dtype)(x)


def _resnet(model_id: str, num_classes: int, dtype: Any) -> nn.Module:
    """The ResNet of ``model_id``, its blocks per stage from ``RESNET_STAGES``."""
    bottleneck, layers = RESNET_STAGES[model_id]
    return FlaxResNet(FlaxBottleneck if bottleneck else FlaxBasicBlock, layers, num_classes, dtype)


def resnet18(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """ResNet-18: 11,689,512 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet18", num_classes, dtype)


def resnet34(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """ResNet-34: 21,797,672 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet34", num_classes, dtype)


def resnet50(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """ResNet-50 v1.5: 25,557,032 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet50", num_classes, dtype)


def resnet101(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """ResNet-101 v1.5: 44,549,160 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet101", num_classes, dtype)


def resnet152(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """ResNet-152 v1.5: 60,192,808 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet152", num_classes, dtype)


def resnet200(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """ResNet-200 (v1.5 bottlenecks): 64,673,832 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet200", num_classes, dtype)


def resnet269(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """ResNet-269 (v1.5 bottlenecks): 102,073,384 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet269", num_classes, dtype)

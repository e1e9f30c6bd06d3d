"""AlexNet "one weird trick" and VGG-16 in Flax, as ``dlbench.models.pytorch.dlbs_classics``
and ``dlbench.models.pytorch.vgg`` define them (NHWC instead of NCHW; the same layers,
widths and parameter counts)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from dlbench.models.jax.layers import (
    adaptive_avg_pool,
    compact,
    kaiming_fan_out,
    max_pool,
    normal_init,
    torch_conv,
    torch_dense,
)


class AlexNetOWT(nn.Module):  # type: ignore[misc]  # flax is not type-checked (see pyproject)
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


# Output channels of each 3x3 convolution of VGG-16 (configuration D); "M" is a 2x2/2
# max pool.
_VGG16 = "64 64 M 128 128 M 256 256 256 M 512 512 512 M 512 512 512 M"


class VGG(nn.Module):  # type: ignore[misc]
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
    return AlexNetOWT(num_classes, dtype)


def vgg16(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """VGG-16: 138,357,544 parameters at 3 channels, 1000 classes."""
    return VGG(_VGG16, num_classes, dtype)

"""ViT-B/16 in Flax, as ``dlbench.models.pytorch.vit`` (torchvision's ``vit_b_16``):
16x16 patches embedded by a strided convolution to 768 channels, a class token, a
learned position embedding for the 14x14 grid of a 224 px image (resized bilinearly
to other grids, as the PyTorch definition does), 12 pre-norm encoder blocks (12
heads, MLP 3072, exact GELU), a final layer norm and a linear head on the class token.

Flax's multi-head attention has torch's ``MultiheadAttention`` parameters (query, key,
value and output projections with biases), split per head."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn

from dlbench.models.jax.layers import compact, normal_init

_PATCH = 16
_GRID = 224 // _PATCH  # the position embedding's trained grid
_DIM, _LAYERS, _HEADS, _MLP = 768, 12, 12, 3072


def _positions(table: Any, height: int, width: int) -> Any:
    """The position embedding ``(1, 1 + height * width, dim)`` for a grid of patches:
    the trained 14x14 part resized bilinearly (half-pixel centres, no antialiasing, as
    ``F.interpolate(align_corners=False)``), the class token's entry kept."""
    if (height, width) == (_GRID, _GRID):
        return table
    grid = table[0, 1:].reshape(_GRID, _GRID, -1)
    grid = jax.image.resize(grid, (height, width, grid.shape[-1]), "bilinear",
                            antialias=False)
    return jnp.concatenate([table[:, :1], grid.reshape(1, height * width, -1)], axis=1)


class FlaxEncoderBlock(nn.Module):  # type: ignore[misc]  # flax is not type-checked (see pyproject)
    """Pre-norm: ``x + attention(ln(x))``, then ``x + mlp(ln(x))``."""

    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any) -> Any:
        """Same shape as ``x``: ``(N, tokens, dim)``."""
        d = self.dtype
        y = nn.LayerNorm(1e-6, dtype=d, param_dtype=jnp.float32)(x)
        y = nn.MultiHeadDotProductAttention(_HEADS, dtype=d, param_dtype=jnp.float32,
                                            qkv_features=_DIM, out_features=_DIM)(y, y)
        x = x + y
        y = nn.LayerNorm(1e-6, dtype=d, param_dtype=jnp.float32)(x)
        dense = {"dtype": d, "param_dtype": jnp.float32, "bias_init": normal_init(1e-6),
                 "kernel_init": nn.initializers.xavier_uniform()}
        y = nn.gelu(nn.Dense(_MLP, **dense)(y), approximate=False)
        return x + nn.Dense(_DIM, **dense)(y)


class FlaxVisionTransformer(nn.Module):  # type: ignore[misc]
    """Patch embedding, class token, position embedding, encoder, head on the class
    token."""

    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for images ``(N, H, W, C)``, H and W >= 16."""
        d = self.dtype
        fan_in = x.shape[-1] * _PATCH * _PATCH
        x = nn.Conv(_DIM, (_PATCH, _PATCH), strides=(_PATCH, _PATCH), padding="VALID",
                    dtype=d, param_dtype=jnp.float32,
                    # torch truncates at ±2, some 55 standard deviations out: a normal.
                    kernel_init=normal_init(math.sqrt(1 / fan_in)))(x)
        batch, height, width, _ = x.shape
        cls = self.param("class_token", nn.initializers.zeros, (1, 1, _DIM), jnp.float32)
        table = self.param("pos_embedding", normal_init(0.02), (1, _GRID * _GRID + 1, _DIM))
        x = jnp.concatenate([jnp.broadcast_to(cls.astype(d), (batch, 1, _DIM)),
                             x.reshape(batch, height * width, _DIM)], axis=1)
        x = x + _positions(table, height, width).astype(d)
        for _ in range(_LAYERS):
            x = FlaxEncoderBlock(d)(x)
        x = nn.LayerNorm(1e-6, dtype=d, param_dtype=jnp.float32)(x)
        return nn.Dense(self.num_classes, dtype=d, param_dtype=jnp.float32,
                        kernel_init=nn.initializers.zeros)(x[:, 0])


def vit_b16(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """ViT-B/16: 86,567,656 parameters at 3 channels and 1000 classes, at any image
    size."""
    return FlaxVisionTransformer(num_classes, dtype)

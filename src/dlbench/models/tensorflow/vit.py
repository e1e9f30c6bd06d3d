"""ViT-B/16 in Keras, as ``dlbench.models.pytorch.vit`` (torchvision's ``vit_b_16``):
16x16 patches embedded by a strided convolution to 768 channels, a class token, a
learned position embedding for the 14x14 grid of a 224 px image (resized bilinearly
to other grids, as the PyTorch definition does), 12 pre-norm encoder blocks (12
heads, MLP 3072, exact GELU), a final layer norm and a linear head on the class token.

Keras's multi-head attention has torch's ``MultiheadAttention`` parameters (query,
key, value and output projections with biases), split per head."""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf

from dlbench.models.tensorflow.layers import nhwc

_PATCH = 16
_GRID = 224 // _PATCH  # the position embedding's trained grid
_DIM, _LAYERS, _HEADS, _MLP = 768, 12, 12, 3072


class ClassTokenAndPositions(keras.layers.Layer):  # type: ignore[misc]  # keras untyped
    """Patches ``(N, h, w, dim)`` → tokens ``(N, 1 + h * w, dim)``: the learned class
    token first, the learned position embedding added (its 14x14 part resized
    bilinearly to ``h x w``, the class token's entry kept)."""

    def __init__(self, grid: int, dim: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.grid = grid
        self.dim = dim
        self.class_token = self.add_weight((1, 1, dim), initializer="zeros", name="class_token")
        self.positions = self.add_weight(
            (1, grid * grid + 1, dim), initializer=keras.initializers.RandomNormal(0.0, 0.02),
            name="pos_embedding")

    def call(self, patches: tf.Tensor) -> tf.Tensor:
        """Tokens with the class token and positions."""
        height, width = int(patches.shape[1]), int(patches.shape[2])
        tokens = tf.reshape(patches, (-1, height * width, self.dim))
        positions = tf.cast(self.positions, tokens.dtype)
        if (height, width) != (self.grid, self.grid):
            grid = tf.reshape(positions[:, 1:], (1, self.grid, self.grid, self.dim))
            # half-pixel centres without antialiasing: F.interpolate(align_corners=False)
            grid = tf.image.resize(grid, (height, width), method="bilinear")
            positions = tf.concat(
                [positions[:, :1], tf.reshape(tf.cast(grid, tokens.dtype),
                                              (1, height * width, self.dim))], axis=1)
        cls = tf.tile(tf.cast(self.class_token, tokens.dtype), (tf.shape(tokens)[0], 1, 1))
        return tf.concat([cls, tokens], axis=1) + positions

    def compute_output_shape(self, input_shape: tuple[Any, ...]) -> tuple[Any, ...]:
        """``(N, 1 + h * w, dim)``."""
        return (input_shape[0], 1 + input_shape[1] * input_shape[2], self.dim)

    def get_config(self) -> dict[str, Any]:
        """Keras's serialisation: the constructor's arguments."""
        return {**super().get_config(), "grid": self.grid, "dim": self.dim}


def _encoder_block(x: keras.KerasTensor) -> keras.KerasTensor:
    """Pre-norm: ``x + attention(ln(x))``, then ``x + mlp(ln(x))``."""
    y = keras.layers.LayerNormalization(epsilon=1e-6)(x)
    y = keras.layers.MultiHeadAttention(_HEADS, _DIM // _HEADS)(y, y)
    x = keras.layers.Add()([x, y])
    y = keras.layers.LayerNormalization(epsilon=1e-6)(x)
    bias = keras.initializers.RandomNormal(0.0, 1e-6)
    y = keras.layers.Dense(_MLP, activation=keras.activations.gelu,
                           kernel_initializer="glorot_uniform", bias_initializer=bias)(y)
    y = keras.layers.Dense(_DIM, kernel_initializer="glorot_uniform", bias_initializer=bias)(y)
    return keras.layers.Add()([x, y])


def vit_b16(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """ViT-B/16: 86,567,656 trainable parameters at 3 channels and 1000 classes, at any
    image size of at least 16 px."""
    inputs = keras.Input(nhwc(input_shape))
    fan_in = input_shape[0] * _PATCH * _PATCH
    x = keras.layers.Conv2D(
        _DIM, _PATCH, strides=_PATCH,
        # torch truncates at ±2, some 55 standard deviations out: a plain normal.
        kernel_initializer=keras.initializers.RandomNormal(0.0, math.sqrt(1 / fan_in)),
    )(inputs)
    x = ClassTokenAndPositions(_GRID, _DIM)(x)
    for _ in range(_LAYERS):
        x = _encoder_block(x)
    x = keras.layers.LayerNormalization(epsilon=1e-6)(x)
    x = keras.layers.Lambda(lambda tokens: tokens[:, 0])(x)
    outputs = keras.layers.Dense(num_classes, kernel_initializer="zeros")(x)
    return keras.Model(inputs, outputs, name="vit_b16")

"""Pieces the Keras definitions share: PyTorch's default initialisation, PyTorch's
padding (convolutions and pools, ``ceil_mode`` included), batch norm with PyTorch's
momentum, Caffe's local response normalisation, and an adaptive average pool with
PyTorch's windows.

Keras 3 has ``AdaptiveAveragePooling2D``, but it runs two pools and a gather even
where the input already has the output's size (the published image sizes), and it
fails when the input is smaller than the output; PyTorch's ``AdaptiveAvgPool2d`` is
the identity in the first case and repeats pixels in the second. The layer here
has PyTorch's windows exactly (``floor(i * n / out)`` to ``ceil((i + 1) * n / out)``).
"""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf

from dlbench.models.layouts import ceil_mode_extra, pair


def torch_uniform(fan_in: int) -> keras.initializers.Initializer:
    """PyTorch's default for the weights and biases of ``Linear`` and ``Conv2d``:
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` (kaiming uniform with ``a = sqrt(5)``)."""
    bound = 1.0 / math.sqrt(fan_in)
    return keras.initializers.RandomUniform(-bound, bound)


def dense(units: int, fan_in: int, activation: str | None = None) -> keras.layers.Dense:
    """A fully connected layer initialised as ``torch.nn.Linear(fan_in, units)``."""
    init = torch_uniform(fan_in)
    return keras.layers.Dense(
        units, activation=activation, kernel_initializer=init, bias_initializer=init
    )


Size = int | tuple[int, int]


def conv(
    filters: int, kernel: Size, in_channels: int, *, strides: int = 1, padding: Size = 0,
    use_bias: bool = True, activation: str | None = None, groups: int = 1,
    kernel_initializer: keras.initializers.Initializer | None = None,
) -> list[keras.layers.Layer]:
    """``torch.nn.Conv2d(in_channels, filters, kernel, strides, padding, groups=groups)``
    in NHWC: explicit zero padding (PyTorch pads both sides alike, Keras's ``same`` pads
    more on the bottom and right when the stride is 2), then a ``valid`` convolution."""
    kernel, padding = pair(kernel), pair(padding)
    fan_in = in_channels // groups * kernel[0] * kernel[1]
    layers: list[keras.layers.Layer] = []
    if padding != (0, 0):
        layers.append(keras.layers.ZeroPadding2D(padding))
    layers.append(keras.layers.Conv2D(
        filters, kernel, strides=strides, padding="valid", use_bias=use_bias,
        activation=activation, groups=groups,
        kernel_initializer=kernel_initializer or torch_uniform(fan_in),
        bias_initializer=torch_uniform(fan_in),
    ))
    return layers


def apply(x: keras.KerasTensor, layers: list[keras.layers.Layer]) -> keras.KerasTensor:
    """``x`` through ``layers`` in turn (functional models use the lists above so)."""
    for layer in layers:
        x = layer(x)
    return x


def batch_norm(epsilon: float = 1e-5) -> keras.layers.BatchNormalization:
    """``torch.nn.BatchNorm2d(eps=epsilon)``: its moving statistics are non-trainable
    weights, as they are buffers in PyTorch."""
    # Keras's momentum is the weight of the old moving average: PyTorch's 0.1 is 0.9.
    return keras.layers.BatchNormalization(momentum=0.9, epsilon=epsilon)


def pool(
    x: keras.KerasTensor, kind: str, window: int, stride: int, padding: int = 0, *,
    ceil: bool = False, count_pad: bool = True,
) -> keras.KerasTensor:
    """``nn.MaxPool2d`` (``kind="max"``) or ``nn.AvgPool2d`` (``"avg"``) on NHWC ``x``,
    with PyTorch's symmetric ``padding`` and ``ceil_mode``. Padding is with zeros, which
    a max pool may only read after a ReLU (every caller's case); an average pool
    counts them (``count_pad``, PyTorch's ``count_include_pad``) or, padding 1 at
    stride 1, leaves them out as Keras's ``same`` does."""
    pool_layer = keras.layers.MaxPooling2D if kind == "max" else keras.layers.AveragePooling2D
    if kind == "avg" and not count_pad:
        if (padding, stride, ceil) != (window // 2, 1, False):
            raise ValueError("an average excluding padding is only 'same' at stride 1")
        return pool_layer(window, strides=1, padding="same")(x)
    extra = [ceil_mode_extra(int(x.shape[axis]), window, stride, padding) if ceil else 0
             for axis in (1, 2)]
    if padding or any(extra):
        x = keras.layers.ZeroPadding2D(
            ((padding, padding + extra[0]), (padding, padding + extra[1])))(x)
    return pool_layer(window, strides=stride)(x)


def _lrn(x: tf.Tensor) -> tf.Tensor:
    # torch's LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1) divides alpha by the
    # window; TensorFlow's does not. Computed in float32 (half has no kernel).
    out = tf.nn.local_response_normalization(
        tf.cast(x, tf.float32), depth_radius=2, bias=1.0, alpha=1e-4 / 5, beta=0.75)
    return tf.cast(out, x.dtype)


def local_response_norm() -> keras.layers.Layer:
    """Caffe's LRN (across channels, local size 5, alpha 1e-4, beta 0.75, k 1), as
    ``torch.nn.LocalResponseNorm(5, 1e-4, 0.75, 1.0)``; no weights."""
    return keras.layers.Lambda(_lrn)


def kaiming_fan_out() -> keras.initializers.Initializer:
    """torchvision's convolution initialisation: ``kaiming_normal_(mode="fan_out",
    nonlinearity="relu")``, an untruncated normal of variance ``2 / fan_out``."""
    return keras.initializers.VarianceScaling(2.0, "fan_out", "untruncated_normal")


def _pool_axis(x: tf.Tensor, axis: int, out: int) -> tf.Tensor:
    """Average ``x`` over PyTorch's adaptive windows along ``axis`` (1 or 2 of NHWC),
    from cumulative sums: the mean of window ``[s, e)`` is ``(C[e] - C[s]) / (e - s)``."""
    size = int(x.shape[axis])
    if size == out:
        return x
    starts = [i * size // out for i in range(out)]
    ends = [-(-(i + 1) * size // out) for i in range(out)]
    widths = tf.constant([e - s for s, e in zip(starts, ends, strict=True)], tf.float32)
    shape = [1, 1, 1, 1]
    shape[axis] = out
    # Summed in float32 so that a float16 activation does not overflow or lose bits.
    sums = tf.cumsum(tf.cast(x, tf.float32), axis=axis)
    zero = tf.zeros_like(tf.gather(sums, [0], axis=axis))
    sums = tf.concat([zero, sums], axis=axis)
    window = tf.gather(sums, ends, axis=axis) - tf.gather(sums, starts, axis=axis)
    return tf.cast(window / tf.reshape(widths, shape), x.dtype)


class AdaptiveAvgPool(keras.layers.Layer):  # type: ignore[misc]  # keras is not type-checked
    """``torch.nn.AdaptiveAvgPool2d((height, width))`` on NHWC images; no weights."""

    def __init__(self, height: int, width: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.height = height
        self.width = width

    def call(self, x: tf.Tensor) -> tf.Tensor:
        """``(N, H, W, C)`` → ``(N, height, width, C)``."""
        return _pool_axis(_pool_axis(x, 1, self.height), 2, self.width)

    def compute_output_shape(self, input_shape: tuple[Any, ...]) -> tuple[Any, ...]:
        """The batch and channels of the input, the pool's height and width."""
        return (input_shape[0], self.height, self.width, input_shape[3])

    def get_config(self) -> dict[str, Any]:
        """Keras's serialisation: the constructor's arguments."""
        return {**super().get_config(), "height": self.height, "width": self.width}


def nhwc(input_shape: tuple[int, ...]) -> tuple[int, ...]:
    """One sample's shape in TensorFlow's layout: ``(C, H, W)`` → ``(H, W, C)``; other
    shapes (features, tokens) unchanged."""
    if len(input_shape) == 3:
        channels, height, width = input_shape
        return (height, width, channels)
    return input_shape

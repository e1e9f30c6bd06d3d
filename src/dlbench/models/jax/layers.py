"""Pieces the Flax models share: PyTorch's initialisers, convolutions, batch norm and
pools (``ceil_mode`` included), Caffe's local response normalisation and adaptive
average pooling.

Initialisers follow PyTorch's defaults (and torchvision's choices where the PyTorch
definition makes them), so that a fresh JAX model starts at the scale of the PyTorch
one: the same losses, the same chance of a long timed run staying finite.

Their random numbers are drawn on the host, with NumPy seeded by the key Flax gives
each parameter, through ``jax.pure_callback``: XLA compiles every one of JAX's own
random draws separately, which on a CPU costs about a second per parameter array
(a minute of set-up for ResNet-50) before a single step has run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from dlbench.models.layouts import ceil_mode_extra, pair

_Method = TypeVar("_Method", bound=Callable[..., Any])

#: ``flax.linen.compact`` with its type spelled out (flax is not type-checked here), so
#: the modules' ``__call__`` methods keep their signatures for mypy.
compact: Callable[[_Method], _Method] = nn.compact


def _host_draw(key: Any, shape: Sequence[int], normal: bool) -> Any:
    """Standard normal or U(-1, 1) float32 numbers of ``shape``, a function of ``key``."""
    seed = jax.random.key_data(key)

    def draw(seed: Any) -> np.ndarray:
        generator = np.random.default_rng([int(word) for word in np.ravel(seed)])
        if normal:
            return generator.standard_normal(tuple(shape), dtype=np.float32)
        return generator.uniform(-1.0, 1.0, tuple(shape)).astype(np.float32)

    return jax.pure_callback(draw, jax.ShapeDtypeStruct(tuple(shape), jnp.float32), seed)


def _fans(shape: Sequence[int]) -> tuple[int, int]:
    """Fan-in and fan-out of a Dense ``(in, out)`` or Conv ``(kh, kw, in, out)`` kernel."""
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


def normal_init(std: float) -> Any:
    """N(0, std^2), e.g. BERT's and GPT-2's 0.02."""

    def init(key: Any, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:
        return (std * _host_draw(key, shape, normal=True)).astype(dtype)

    return init


def uniform_init(bound: float) -> Any:
    """U(-bound, bound)."""

    def init(key: Any, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:
        return (bound * _host_draw(key, shape, normal=False)).astype(dtype)

    return init


def torch_default_kernel(key: Any, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:
    """torch.nn.Linear's and Conv2d's default weights: kaiming_uniform_(a=sqrt(5)),
    which is U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    fan_in, _ = _fans(shape)
    return uniform_init(1.0 / math.sqrt(fan_in))(key, shape, dtype)


def kaiming_fan_out(key: Any, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:
    """torchvision's convolutions: kaiming_normal_(mode="fan_out", nonlinearity="relu"),
    N(0, 2 / fan_out)."""
    _, fan_out = _fans(shape)
    return normal_init(math.sqrt(2.0 / fan_out))(key, shape, dtype)


def torch_default_bias(fan_in: int) -> Any:
    """torch's default bias, U(-1/sqrt(fan_in), 1/sqrt(fan_in)); ``fan_in`` comes from
    the caller, since a Flax bias initialiser sees the bias's shape alone."""
    return uniform_init(1.0 / math.sqrt(fan_in) if fan_in else 0.0)


def _pool_matrix(size_in: int, size_out: int) -> np.ndarray:
    """``(size_out, size_in)`` averaging weights of PyTorch's adaptive pooling: output
    ``i`` averages inputs ``floor(i * in / out)`` to ``ceil((i + 1) * in / out) - 1``."""
    matrix = np.zeros((size_out, size_in), dtype=np.float32)
    for i in range(size_out):
        start = (i * size_in) // size_out
        end = -((-(i + 1) * size_in) // size_out)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def adaptive_avg_pool(x: Any, size: tuple[int, int]) -> Any:
    """``nn.AdaptiveAvgPool2d(size)`` for NHWC ``x``: the identity when the input already
    has that size (the published image sizes); otherwise two small matrix products with
    the same bins as PyTorch's, so that any image size reaches the same classifier."""
    height, width = x.shape[1], x.shape[2]
    if (height, width) == size:
        return x
    rows = jnp.asarray(_pool_matrix(height, size[0]), dtype=x.dtype)
    cols = jnp.asarray(_pool_matrix(width, size[1]), dtype=x.dtype)
    return jnp.einsum("nhwc,oh,pw->nopc", x, rows, cols)


def torch_dense(features: int, fan_in: int, dtype: Any, name: str | None = None) -> nn.Dense:
    """``nn.Linear(fan_in, features)`` with torch's default initialisation; parameters in
    float32, computation in ``dtype``."""
    return nn.Dense(features, dtype=dtype, param_dtype=jnp.float32, name=name,
                    kernel_init=torch_default_kernel, bias_init=torch_default_bias(fan_in))


Size = int | tuple[int, int]


def torch_conv(
    features: int, kernel: Size, fan_in_channels: int, dtype: Any, *, stride: int = 1,
    padding: Size = 0, groups: int = 1, name: str | None = None,
) -> nn.Conv:
    """``nn.Conv2d(fan_in_channels, features, kernel, stride, padding, groups=groups)``
    (bias included) with torch's default initialisation, for NHWC inputs."""
    (kh, kw), (ph, pw) = pair(kernel), pair(padding)
    return nn.Conv(
        features, (kh, kw), strides=(stride, stride), padding=((ph, ph), (pw, pw)),
        feature_group_count=groups, dtype=dtype, param_dtype=jnp.float32, name=name,
        kernel_init=torch_default_kernel,
        bias_init=torch_default_bias(fan_in_channels // groups * kh * kw),
    )


def batch_norm(train: bool, dtype: Any, epsilon: float = 1e-5,
               name: str | None = None) -> nn.BatchNorm:
    """``nn.BatchNorm2d(eps=epsilon)``: batch statistics in training, running averages
    updated by 0.1 of the batch's (Flax's momentum is the share kept)."""
    # Flax reduces in float32 under mixed precision, as autocast does.
    return nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=epsilon,
                        dtype=dtype, param_dtype=jnp.float32, name=name)


def max_pool(x: Any, window: int, stride: int, padding: int = 0, ceil: bool = False) -> Any:
    """``nn.MaxPool2d(window, stride, padding, ceil_mode=ceil)`` on NHWC ``x`` (Flax pads
    with -inf, so padding never wins)."""
    extra = [ceil_mode_extra(x.shape[axis], window, stride, padding) if ceil else 0
             for axis in (1, 2)]
    pad = ((padding, padding + extra[0]), (padding, padding + extra[1]))
    return nn.max_pool(x, (window, window), strides=(stride, stride), padding=pad)


def avg_pool(x: Any, window: int, stride: int, padding: int = 0,
             count_pad: bool = True) -> Any:
    """``nn.AvgPool2d(window, stride, padding, count_include_pad=count_pad)`` on NHWC
    ``x``."""
    pad = ((padding, padding), (padding, padding))
    return nn.avg_pool(x, (window, window), strides=(stride, stride), padding=pad,
                       count_include_pad=count_pad)


def local_response_norm(x: Any, size: int = 5, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Any:
    """``torch.nn.LocalResponseNorm(size, alpha, beta, k)`` across the channels of NHWC
    ``x``: ``x / (k + alpha / size * sum of squares over the window) ** beta``, the
    window padded as PyTorch pads it (``size // 2`` before, ``(size - 1) // 2`` after);
    summed in float32."""
    squares = jnp.square(x.astype(jnp.float32))
    sums = jax.lax.reduce_window(
        squares, 0.0, jax.lax.add, (1, 1, 1, size), (1, 1, 1, 1),
        ((0, 0), (0, 0), (0, 0), (size // 2, (size - 1) // 2)))
    return (x / (k + alpha / size * sums) ** beta).astype(x.dtype)

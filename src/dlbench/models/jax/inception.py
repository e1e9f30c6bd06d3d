"""GoogLeNet, Inception-v3 and Inception-v4 in Flax (NHWC), walking their layouts in
:mod:`dlbench.models.layouts`, which says what each op is and how the weights start.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from dlbench.models.jax.layers import (
    adaptive_avg_pool,
    avg_pool,
    batch_norm,
    compact,
    max_pool,
    normal_init,
    torch_default_kernel,
    torch_dense,
)
from dlbench.models.layouts import (
    GOOGLENET,
    INCEPTION3_AUX,
    INCEPTION3_BODY,
    INCEPTION3_HEAD,
    INCEPTION4,
    Concat,
    Conv,
    Op,
)


def _run(x: Any, ops: tuple[Op, ...], std: float | None, train: bool, dtype: Any) -> Any:
    """``x`` through a layout, inside a compact module's call; ``std`` the normal
    weights' scale, None for PyTorch's default initialisation."""
    for op in ops:
        if isinstance(op, Conv):
            scale = op.std or std
            (ph, pw) = op.padding
            x = nn.Conv(op.out, op.kernel, strides=(op.stride, op.stride),
                        padding=((ph, ph), (pw, pw)), use_bias=False, dtype=dtype,
                        param_dtype=jnp.float32,
                        kernel_init=normal_init(scale) if scale else torch_default_kernel)(x)
            x = nn.relu(batch_norm(train, dtype, 1e-3)(x))
        elif isinstance(op, Concat):
            x = jnp.concatenate([_run(x, b, std, train, dtype) for b in op.branches], axis=-1)
        elif op.kind == "max":
            x = max_pool(x, op.kernel, op.stride, op.padding, ceil=op.ceil)
        else:
            x = avg_pool(x, op.kernel, op.stride, op.padding, count_pad=op.count_pad)
    return x


def _classifier(x: Any, dropout: float, num_classes: int, std: float | None, train: bool,
                dtype: Any) -> Any:
    """Global average pool, dropout, fc."""
    x = nn.Dropout(dropout, deterministic=not train)(jnp.mean(x, axis=(1, 2)))
    if std is None:
        return torch_dense(num_classes, x.shape[-1], dtype)(x)
    return nn.Dense(num_classes, dtype=dtype, param_dtype=jnp.float32,
                    kernel_init=normal_init(std))(x)


class FlaxGoogLeNet(nn.Module):  # type: ignore[misc]  # flax is not type-checked (see pyproject)
    """GoogLeNet with batch norm, without auxiliary classifiers."""

    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for images ``(N, H, W, C)``."""
        x = _run(x, GOOGLENET, 0.01, train, self.dtype)
        return _classifier(x, 0.2, self.num_classes, 0.01, train, self.dtype)


class FlaxInception3(nn.Module):  # type: ignore[misc]
    """Inception-v3 with its auxiliary classifier, which runs in training only, its
    logits weighted 0.4 into the output (as the PyTorch definition does)."""

    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for images ``(N, H, W, C)``, H and W >= 75."""
        body = _run(x, INCEPTION3_BODY, 0.1, train, self.dtype)
        logits = _classifier(_run(body, INCEPTION3_HEAD, 0.1, train, self.dtype), 0.5,
                             self.num_classes, 0.1, train, self.dtype)
        if not train and not self.is_initializing():
            return logits
        # torchvision pools 17x17 to 5x5 with a 5x5/3 window; smaller grids adaptively.
        if min(body.shape[1:3]) >= 17:
            aux = avg_pool(body, 5, 3)
        else:
            aux = adaptive_avg_pool(body, (5, 5))
        aux = jnp.mean(_run(aux, INCEPTION3_AUX, 0.1, train, self.dtype), axis=(1, 2))
        aux = nn.Dense(self.num_classes, dtype=self.dtype, param_dtype=jnp.float32,
                       kernel_init=normal_init(0.001))(aux)
        return logits + 0.4 * aux if train else logits


class FlaxInception4(nn.Module):  # type: ignore[misc]
    """Inception-v4: stem, 4 x A, reduction A, 7 x B, reduction B, 3 x C, classifier."""

    num_classes: int
    dtype: Any = jnp.float32

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """Logits ``(N, num_classes)`` for images ``(N, H, W, C)``, H and W >= 75."""
        x = _run(x, INCEPTION4, None, train, self.dtype)
        return _classifier(x, 0.2, self.num_classes, None, train, self.dtype)


def googlenet(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """GoogLeNet as torchvision's ``googlenet(aux_logits=False)``: 6,624,904 parameters
    at 3 channels and 1000 classes."""
    return FlaxGoogLeNet(num_classes, dtype)


def inception3(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """Inception-v3 with its auxiliary head: 27,161,264 parameters at 3 channels and
    1000 classes."""
    return FlaxInception3(num_classes, dtype)


def inception4(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """Inception-v4: 42,679,816 parameters at 3 channels and 1000 classes."""
    return FlaxInception4(num_classes, dtype)

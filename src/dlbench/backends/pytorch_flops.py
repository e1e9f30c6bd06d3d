"""dlbench's corrections to PyTorch's ``FlopCounterMode`` formulas: the FLOPs of a
convolution's backward and of the CPU's flash attention, which PyTorch counts wrong or
not at all. Used by the PyTorch backend and, as the reference count, by the other
frameworks' tests."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import torch

__all__ = ["flop_formulas"]


def _attention_flops(
    query: tuple[int, ...], key: tuple[int, ...], value: tuple[int, ...]
) -> int:
    """The two batched matrix products of attention, as FlopCounterMode counts the
    CUDA kernels: ``Q K^T`` and ``P V``."""
    *heads, queries, depth = query  # (batch, heads, queries, depth)
    keys, value_depth = key[-2], value[-1]
    return 2 * math.prod(heads) * queries * keys * (depth + value_depth)


def _cpu_attention(
    query: tuple[int, ...], key: tuple[int, ...], value: tuple[int, ...], *args: Any,
    **kwargs: Any,
) -> int:
    return _attention_flops(query, key, value)


def _cpu_attention_backward(
    grad_out: tuple[int, ...], query: tuple[int, ...], key: tuple[int, ...],
    value: tuple[int, ...], *args: Any, **kwargs: Any,
) -> int:
    # Four products (grads of V, of the scores, of Q and of K): twice the forward.
    return 2 * _attention_flops(query, key, value)


def _conv_backward(
    grad_out: tuple[int, ...], x: tuple[int, ...], weight: tuple[int, ...], _bias: Any,
    _stride: Any, _padding: Any, _dilation: Any, transposed: bool, _output_padding: Any,
    _groups: int, output_mask: Any, **kwargs: Any,
) -> int:
    """A convolution's input and weight gradients, each as many FLOPs as its forward:
    ``2 * batch * weight elements * positions`` (output positions; input positions for
    a transposed convolution). PyTorch's own formula forgets the groups in the weight
    gradient, counting a depthwise convolution's ``groups`` times over (and, before
    2.2, got transposed convolutions wrong: pytorch/pytorch#119806)."""
    positions = x[2:] if transposed else grad_out[2:]
    one = 2 * x[0] * math.prod(weight) * math.prod(positions)
    return one * (int(bool(output_mask[0])) + int(bool(output_mask[1])))


def flop_formulas() -> dict[Any, Any]:
    """Our corrections to FlopCounterMode's formulas, where this PyTorch has the ops.

    PyTorch counts the attention kernels of CUDA but not the CPU's flash attention,
    which would make a transformer's FLOPs on CPU miss its attention.
    """
    mapping: dict[Any, Any] = {torch.ops.aten.convolution_backward: _conv_backward}
    for name, formula in (
        ("_scaled_dot_product_flash_attention_for_cpu", _cpu_attention),
        ("_scaled_dot_product_flash_attention_for_cpu_backward", _cpu_attention_backward),
    ):
        with contextlib.suppress(AttributeError, RuntimeError):
            mapping[getattr(torch.ops.aten, name)] = formula
    return mapping

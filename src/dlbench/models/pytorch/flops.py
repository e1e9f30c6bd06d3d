"""FLOPs of one PyTorch step, counted by PyTorch's ``FlopCounterMode`` with dlbench's
corrections to its formulas: the FLOPs of a convolution's backward and of the CPU's
flash attention, which PyTorch counts wrong or not at all.

The convention: matrix products and convolutions only, two operations per
multiply-add; forward for inference, forward and backward for training (the
optimizer's elementwise update is not counted). :func:`count_step_flops` runs one
step of a workload under the counter; it counts the architecture's FLOPs on the
``meta`` device (:mod:`dlbench.models.flops`, the same number in every framework) and
the PyTorch backend's own count on a real batch.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

if TYPE_CHECKING:
    from dlbench.models.pytorch.workload_base import Workload

__all__ = ["count_step_flops", "flop_formulas"]


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


def count_step_flops(
    workload: Workload, module: nn.Module, inputs: torch.Tensor, targets: torch.Tensor,
    training: bool, autocast: Callable[[], Any] = contextlib.nullcontext,
) -> int:
    """FLOPs of one step of ``workload`` on the batch ``(inputs, targets)``, all of its
    samples together: the forward pass for inference; for training, each of the
    workload's losses and its backward pass (no optimizer step). ``module`` is left in
    the mode it was given, without gradients. Runs on any device, ``meta`` included."""
    recurrent = any(isinstance(m, nn.RNNBase) for m in module.modules())
    with contextlib.ExitStack() as stack:
        if recurrent:
            # cuDNN's and oneDNN's fused LSTM kernels are invisible to the counter;
            # PyTorch's own LSTM runs the same matrix products as operators it sees.
            stack.enter_context(warnings.catch_warnings())
            warnings.filterwarnings("ignore", message=".*oneDNN.*")
            stack.enter_context(torch.backends.cudnn.flags(enabled=False))
            stack.enter_context(torch.backends.mkldnn.flags(enabled=False))
        counter = stack.enter_context(
            FlopCounterMode(display=False, custom_mapping=flop_formulas())
        )
        if training:
            losses = workload.training_losses(module, inputs, targets)
            # One loss per optimizer, each with its backward pass, as a training step.
            for _group in workload.parameter_groups(module):
                with autocast():
                    loss = next(losses)
                loss.backward()
        else:
            with torch.inference_mode(), autocast():
                workload.infer(module, inputs)
    module.zero_grad(set_to_none=True)
    return int(counter.get_total_flops())

"""Where a PyTorch model's memory goes: weights, gradients, optimizer state,
activations saved for backward, and the allocator's peak.

Counts are exact where PyTorch can tell: a tensor's bytes are its elements times
its element size; optimizer state is the tensors in ``optimizer.state`` (SGD's
momentum, Adam's two moments and step counts); saved activations are what autograd
keeps for the backward pass, seen through ``torch.autograd.graph.saved_tensors_hooks``
(which works on any device), each storage counted once and the parameters' own
storages left out. Under autocast the low-precision copies of the weights that
autograd saves count as activations (they exist for backward, whatever the batch).
The device peak comes from the CUDA caching allocator; the CPU has no such
allocator, so there the peak is left out (the monitor's ``results.use.rss_mb_max``
is the process's whole resident memory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

__all__ = ["gradients_bytes", "optimizer_bytes", "saved_activation_bytes", "tensor_bytes",
           "weights_bytes"]


def tensor_bytes(tensor: torch.Tensor) -> int:
    """Elements times element size: the bytes of the tensor's own elements."""
    return int(tensor.numel() * tensor.element_size())


def weights_bytes(parameters: Iterable[torch.Tensor]) -> int:
    """Bytes of the parameters (each counted once, as ``module.parameters()`` gives)."""
    return sum(tensor_bytes(p) for p in parameters)


def gradients_bytes(parameters: Iterable[torch.Tensor]) -> int:
    """Bytes of the gradients the parameters hold now."""
    return sum(tensor_bytes(p.grad) for p in parameters if p.grad is not None)


def optimizer_bytes(optimizers: Iterable[torch.optim.Optimizer]) -> int:
    """Bytes of every tensor in the optimizers' state, each storage counted once."""
    seen: set[int] = set()
    total = 0
    for optimizer in optimizers:
        for state in optimizer.state.values():
            for value in state.values():
                if isinstance(value, torch.Tensor) and value.data_ptr() not in seen:
                    seen.add(value.data_ptr())
                    total += tensor_bytes(value)
    return total


def _storage_key(tensor: torch.Tensor) -> tuple[str, int]:
    return str(tensor.device), tensor.untyped_storage().data_ptr()


def saved_activation_bytes(
    forward: Callable[[], Any], parameters: Iterable[torch.Tensor]
) -> tuple[int, Any]:
    """Bytes autograd saves for backward while ``forward()`` runs, and what it
    returned. A storage shared by several saved tensors (views) counts once; the
    parameters' storages do not count."""
    excluded = {_storage_key(p) for p in parameters}
    seen: set[tuple[str, int]] = set()
    total = 0

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        nonlocal total
        key = _storage_key(tensor)
        if key not in excluded and key not in seen:
            seen.add(key)
            total += int(tensor.untyped_storage().nbytes())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        output = forward()
    return total, output


def device_peak(device: torch.device) -> dict[str, Any]:
    """The allocator's peak on ``device`` (CUDA), or a note saying why there is none."""
    if device.type == "cuda":
        return {"results.memory.peak_bytes": int(torch.cuda.max_memory_allocated(device))}
    return {"results.memory.note": "no allocator peak on the CPU: see "
                                   "results.use.rss_mb_max for the process"}

"""What a real training step of a PyTorch model must leave behind: a finite gradient
for every parameter."""

from __future__ import annotations

import torch
from torch import nn


def assert_finite_gradients(module: nn.Module) -> None:
    """Every parameter of ``module`` has a gradient, and every gradient is finite.

    A sum is finite only if every term is (a NaN or an infinity carries through it,
    and +inf with -inf gives NaN), so one reduction per tensor answers, where
    ``torch.isfinite(grad).all()`` first writes a mask as large as the weights: most
    of a second for VGG's 138 million. (Float32 gradients would have to sum past
    3e38 for a finite tensor to fail.)"""
    for name, param in module.named_parameters():
        assert param.grad is not None, name
        assert torch.isfinite(param.grad.sum()), name

"""Recommendation and the two toys of Mila's suite: neural collaborative filtering
(NeuMF), polynomial regression and LSTM time-series prediction."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from dlbench.models.pytorch.workload_base import Batch, Workload

USERS, ITEMS = 138_493, 26_744  # MovieLens 20M


class NeuMF(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """Neural matrix factorisation (He et al., 2017) as in MLPerf's recommendation
    benchmark on MovieLens 20M: a GMF branch (64 factors) and an MLP branch (user and
    item embeddings of 128, layers 256-256-128-64) joined by one output unit;
    31,832,577 parameters."""

    def __init__(
        self, users: int = USERS, items: int = ITEMS, factors: int = 64,
        layers: tuple[int, ...] = (256, 256, 128, 64),
    ) -> None:
        super().__init__()
        self.gmf_user = nn.Embedding(users, factors)
        self.gmf_item = nn.Embedding(items, factors)
        self.mlp_user = nn.Embedding(users, layers[0] // 2)
        self.mlp_item = nn.Embedding(items, layers[0] // 2)
        mlp: list[nn.Module] = []
        for cin, cout in pairwise(layers):
            mlp += [nn.Linear(cin, cout), nn.ReLU()]
        self.mlp = nn.Sequential(*mlp)
        self.output = nn.Linear(factors + layers[-1], 1)
        for embedding in (self.gmf_user, self.gmf_item, self.mlp_user, self.mlp_item):
            nn.init.normal_(embedding.weight, 0.0, 0.01)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        """Interaction logits ``(B,)`` for ``(user, item)`` id pairs ``(B, 2)``."""
        users, items = pairs[:, 0], pairs[:, 1]
        gmf = self.gmf_user(users) * self.gmf_item(items)
        mlp = self.mlp(torch.cat([self.mlp_user(users), self.mlp_item(items)], dim=1))
        return self.output(torch.cat([gmf, mlp], dim=1)).squeeze(-1)


class PolynomialRegression(nn.Module):  # type: ignore[misc]
    """PyTorch's regression example: a linear layer on ``[x, x^2, x^3, x^4]``."""

    def __init__(self, degree: int = 4) -> None:
        super().__init__()
        self.degree = degree
        self.fc = nn.Linear(degree, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, 1)`` → ``(B, 1)``; the powers are computed here, on the device."""
        return self.fc(torch.cat([x**power for power in range(1, self.degree + 1)], dim=1))


class SinePredictor(nn.Module):  # type: ignore[misc]
    """PyTorch's time_sequence_prediction example: two stacked LSTM cells of 51 units
    and a linear read-out, 32,284 parameters. Written as one two-layer ``nn.LSTM``
    (the same parameters and arithmetic) so that cuDNN runs the sequence, rather
    than a Python loop over 1,000 cell calls."""

    def __init__(self, hidden: int = 51) -> None:
        super().__init__()
        self.lstm = nn.LSTM(1, hidden, num_layers=2, batch_first=True)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, series: torch.Tensor) -> torch.Tensor:
        """The next value at every step ``(B, T)`` for series ``(B, T)``."""
        out, _state = self.lstm(series.unsqueeze(-1))
        return self.linear(out).squeeze(-1)


def ncf(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """NeuMF on MovieLens 20M's users and items."""
    return NeuMF()


def toy_reg(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """The degree-4 polynomial regression."""
    return PolynomialRegression()


def toy_lstm(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """The sine-wave LSTM (any series length)."""
    return SinePredictor()


class RecommendationWorkload(Workload):
    """Implicit feedback: random (user, item) pairs, one positive in five (MLPerf
    samples four negatives per positive), binary cross-entropy on the logit."""

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Id pairs ``(B, 2)`` and 0/1 labels ``(B,)``."""
        users = torch.randint(0, USERS, (batch_size,), device=device)
        items = torch.randint(0, ITEMS, (batch_size,), device=device)
        labels = (torch.rand(batch_size, device=device) < 0.2).float()
        return torch.stack([users, items], dim=1), labels

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Binary cross-entropy with logits."""
        return F.binary_cross_entropy_with_logits(model(inputs).float(), targets)


class RegressionWorkload(Workload):
    """Points ``x ~ N(0, 1)`` and the value of a fixed degree-4 polynomial (the
    example's random target, seeded here so every run fits the same one); smooth L1."""

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """``x`` ``(B, 1)`` and ``f(x)`` ``(B, 1)``."""
        generator = torch.Generator().manual_seed(0)
        weights = (torch.randn(4, generator=generator) * 5).to(device)
        bias = float(torch.randn(1, generator=generator).item() * 5)
        x = torch.randn(batch_size, 1, device=device)
        powers = torch.cat([x**power for power in range(1, 5)], dim=1)
        return x, (powers @ weights + bias).unsqueeze(1)

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The example's smooth L1 loss."""
        return F.smooth_l1_loss(model(inputs).float(), targets)


class SineWorkload(Workload):
    """Shifted sine waves as the example makes them (period 20 steps, a random
    offset of up to 80 steps per series); predict each next value, mean squared
    error."""

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Series ``(B, T)`` and the same series one step later."""
        length = self.input_shape[0]
        offsets = torch.randint(-80, 80, (batch_size, 1), device=device)
        steps = torch.arange(length + 1, device=device) + offsets
        waves = torch.sin(steps.float() / 20.0)
        return waves[:, :-1].contiguous(), waves[:, 1:].contiguous()

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean squared error of the next-value predictions."""
        return F.mse_loss(model(inputs).float(), targets)

"""Machine translation: the Transformer base model of Vaswani et al. (2017) on
``nn.Transformer``, with one shared source/target/output vocabulary of 32,000
sub-words, trained with teacher forcing."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from dlbench.models.pytorch.workload_base import Batch, Workload


def sinusoids(length: int, dim: int, device: torch.device) -> torch.Tensor:
    """The fixed sinusoidal position encodings ``(length, dim)`` of the paper."""
    positions = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)
    rates = torch.exp(
        torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim)
    )
    table = torch.zeros(length, dim, device=device)
    table[:, 0::2] = torch.sin(positions * rates)
    table[:, 1::2] = torch.cos(positions * rates)
    return table


class Translator(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """Transformer base: 6 encoder and 6 decoder layers of width 512, 8 heads, feed-
    forward 2048, dropout 0.1, post-norm. One embedding table serves the source, the
    target and (transposed) the output projection, as in the paper's shared-vocabulary
    set-up: 60,524,544 parameters."""

    def __init__(
        self, vocab_size: int = 32000, dim: int = 512, heads: int = 8, layers: int = 6,
        hidden: int = 2048,
    ) -> None:
        super().__init__()
        self.dim = dim
        self.embed = nn.Embedding(vocab_size, dim)
        nn.init.normal_(self.embed.weight, mean=0.0, std=dim**-0.5)
        self.dropout = nn.Dropout(0.1)
        self.transformer = nn.Transformer(
            d_model=dim, nhead=heads, num_encoder_layers=layers, num_decoder_layers=layers,
            dim_feedforward=hidden, dropout=0.1, batch_first=True,
        )

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        length = tokens.shape[1]
        x = self.embed(tokens) * math.sqrt(self.dim) + sinusoids(length, self.dim, tokens.device)
        return self.dropout(x)

    def forward(self, pair: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, T, vocab)`` of the next target token, for ``pair`` ``(B, 2, T)``:
        source ids, then the target ids shifted right (teacher forcing)."""
        source, target = pair[:, 0], pair[:, 1]
        causal = nn.Transformer.generate_square_subsequent_mask(
            target.shape[1], device=target.device
        )
        out = self.transformer(
            self._embed(source), self._embed(target), tgt_mask=causal, tgt_is_causal=True
        )
        return F.linear(out, self.embed.weight)


def translator(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """Transformer base over a shared vocabulary of ``num_classes`` sub-words; the
    sequence length ``input_shape == (T,)`` needs no parameters."""
    return Translator(vocab_size=num_classes)


class TranslationWorkload(Workload):
    """Source and target sequences of ``T`` tokens each; cross-entropy with the
    paper's label smoothing of 0.1; throughput counted on target tokens."""

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Inputs ``(B, 2, T)`` (source; target shifted right) and targets ``(B, T)``."""
        length = self.input_shape[0]
        vocab = self.info.vocab_size or self.info.num_classes
        source = torch.randint(0, vocab, (batch_size, length), device=device)
        target = torch.randint(0, vocab, (batch_size, length + 1), device=device)
        return torch.stack([source, target[:, :-1]], dim=1), target[:, 1:].contiguous()

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Label-smoothed cross-entropy over every target position."""
        logits = model(inputs)
        return F.cross_entropy(
            logits.flatten(0, 1).float(), targets.flatten(), label_smoothing=0.1
        )

    def throughput_unit(self, training: bool) -> tuple[str, float]:
        """Target tokens: ``T`` per sentence pair."""
        return "tokens/s", float(self.input_shape[0])

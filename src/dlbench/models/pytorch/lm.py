"""Language models: BERT-base (masked LM), GPT-2 small (causal LM) and the two-layer
LSTM of PyTorch's word_language_model example, with their training workloads.

The transformers are written out (not ``nn.TransformerEncoderLayer``) so that
attention goes through ``scaled_dot_product_attention`` with ``is_causal`` (flash
attention on GPUs) and the layouts match the published checkpoints: parameter
counts are exactly Hugging Face's ``BertForMaskedLM`` (109,514,298) and GPT-2 small
(124,439,808).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from dlbench.models.pytorch.workload_base import Batch, Workload, token_batch


class TransformerBlock(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """Self-attention and a GELU MLP, each with a residual; post-norm as in BERT or
    pre-norm as in GPT-2. Q, K and V come from one fused projection (GPT-2's
    ``c_attn``; BERT's three projections have the same parameter count)."""

    def __init__(
        self, dim: int, heads: int, hidden: int, *, pre_norm: bool, causal: bool,
        eps: float, gelu: str, dropout: float = 0.1,
    ) -> None:
        super().__init__()
        self.heads = heads
        self.pre_norm = pre_norm
        self.causal = causal
        self.gelu = gelu
        self.dropout_p = dropout
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attn_out = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def _attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        q, k, v = (
            t.view(batch, length, self.heads, dim // self.heads).transpose(1, 2)
            for t in self.qkv(x).split(dim, dim=2)
        )
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=self.causal, dropout_p=self.dropout_p if self.training else 0.0
        )
        return self.dropout(self.attn_out(y.transpose(1, 2).reshape(batch, length, dim)))

    def _mlp(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.fc2(F.gelu(self.fc1(x), approximate=self.gelu)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, dim)`` → ``(B, T, dim)``."""
        if self.pre_norm:
            x = x + self._attention(self.norm1(x))
            return x + self._mlp(self.norm2(x))
        x = self.norm1(x + self._attention(x))
        return self.norm2(x + self._mlp(x))


def _init_normal(module: nn.Module, std: float = 0.02) -> None:
    """BERT's and GPT-2's initialisation: N(0, 0.02) weights, zero biases."""
    for sub in module.modules():
        if isinstance(sub, (nn.Linear, nn.Embedding)):
            nn.init.normal_(sub.weight, mean=0.0, std=std)
        if isinstance(sub, nn.Linear) and sub.bias is not None:
            nn.init.zeros_(sub.bias)


class BertMaskedLM(nn.Module):  # type: ignore[misc]
    """BERT (Devlin et al., 2018) with its masked-LM head, as ``BertForMaskedLM``: no
    pooler; the decoder shares the word embeddings and has its own bias."""

    def __init__(
        self, vocab_size: int = 30522, dim: int = 768, layers: int = 12, heads: int = 12,
        max_positions: int = 512,
    ) -> None:
        super().__init__()
        self.word = nn.Embedding(vocab_size, dim)
        self.position = nn.Embedding(max_positions, dim)
        self.token_type = nn.Embedding(2, dim)
        self.embed_norm = nn.LayerNorm(dim, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.blocks = nn.ModuleList(
            TransformerBlock(dim, heads, 4 * dim, pre_norm=False, causal=False, eps=1e-12,
                             gelu="none")
            for _ in range(layers)
        )
        self.head_dense = nn.Linear(dim, dim)
        self.head_norm = nn.LayerNorm(dim, eps=1e-12)
        self.head_bias = nn.Parameter(torch.zeros(vocab_size))
        _init_normal(self)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, T, vocab)`` for token ids ``(B, T)`` (one segment, no padding)."""
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        # A single segment: every token has type 0.
        x = self.word(tokens) + self.position(positions) + self.token_type.weight[0]
        x = self.dropout(self.embed_norm(x))
        for block in self.blocks:
            x = block(x)
        x = self.head_norm(F.gelu(self.head_dense(x)))
        return F.linear(x, self.word.weight, self.head_bias)


class GPT2(nn.Module):  # type: ignore[misc]
    """GPT-2 (Radford et al., 2019): pre-norm blocks, tanh GELU, a final LayerNorm, and
    the output projection tied to the token embeddings."""

    def __init__(
        self, vocab_size: int = 50257, dim: int = 768, layers: int = 12, heads: int = 12,
        max_positions: int = 1024,
    ) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab_size, dim)
        self.wpe = nn.Embedding(max_positions, dim)
        self.dropout = nn.Dropout(0.1)
        self.blocks = nn.ModuleList(
            TransformerBlock(dim, heads, 4 * dim, pre_norm=True, causal=True, eps=1e-5,
                             gelu="tanh")
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(dim)
        _init_normal(self)
        # GPT-2 scales the projections into the residual stream by 1/sqrt(2 * layers).
        for block in self.blocks:
            for proj in (block.attn_out, block.fc2):
                nn.init.normal_(proj.weight, mean=0.0, std=0.02 / math.sqrt(2 * layers))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Next-token logits ``(B, T, vocab)`` for token ids ``(B, T)``."""
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.dropout(self.wte(tokens) + self.wpe(positions))
        for block in self.blocks:
            x = block(x)
        return F.linear(self.norm(x), self.wte.weight)


class WordLanguageModel(nn.Module):  # type: ignore[misc]
    """``RNNModel`` of PyTorch's word_language_model example with ``--model LSTM
    --emsize 650 --nhid 650 --dropout 0.5`` (untied): embedding, two LSTM layers,
    a linear decoder."""

    def __init__(
        self, vocab_size: int = 33278, embedding: int = 650, hidden: int = 650, layers: int = 2
    ) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.encoder = nn.Embedding(vocab_size, embedding)
        self.rnn = nn.LSTM(embedding, hidden, layers, dropout=0.5)
        self.decoder = nn.Linear(hidden, vocab_size)
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Next-token logits ``(B, T, vocab)`` for ids ``(B, T)``, from a zero state
        (the example carries the state between batches; the work is the same)."""
        # The example's layout is time-major, which is what cuDNN's LSTM runs natively.
        emb = self.drop(self.encoder(tokens.t()))
        out, _state = self.rnn(emb)
        return self.decoder(self.drop(out)).transpose(0, 1)


def bert_base(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """BERT-base for sequences of ``input_shape == (T,)`` over ``num_classes`` token ids;
    the position table grows past 512 only for longer sequences."""
    return BertMaskedLM(vocab_size=num_classes, max_positions=max(512, input_shape[0]))


def gpt2_small(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """GPT-2 small (124M) for sequences of ``input_shape == (T,)``."""
    return GPT2(vocab_size=num_classes, max_positions=max(1024, input_shape[0]))


def wlm(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """The word language model LSTM over a vocabulary of ``num_classes`` words."""
    return WordLanguageModel(vocab_size=num_classes)


def _flat_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    # -100 marks positions without a target (the unmasked tokens of a masked LM).
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), ignore_index=-100)


class CausalLMWorkload(Workload):
    """Next-token prediction over every position: GPT-2 and the LSTM. Throughput in
    tokens (``seq_len`` per sample); real text feeds it as it comes."""

    def _vocab(self) -> int:
        return self.info.vocab_size or self.info.num_classes

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Random token ids and their next-token targets, ``(B, T)`` each."""
        return token_batch(batch_size, self.input_shape[0], self._vocab(), device)

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of the next token at every position."""
        return _flat_cross_entropy(model(inputs), targets)

    def throughput_unit(self, training: bool) -> tuple[str, float]:
        """Tokens: one sample is a sequence of ``T`` of them."""
        return "tokens/s", float(self.input_shape[0])


class MaskedLMWorkload(CausalLMWorkload):
    """BERT's masked-LM pre-training objective: 15 % of the positions (at least one)
    are replaced by ``[MASK]`` and predicted. Always ``[MASK]`` rather than BERT's
    80/10/10 mix of mask, random and kept tokens: the computation is the same."""

    MASK_ID = 103  # [MASK] in BERT's uncased WordPiece vocabulary
    MASK_FRACTION = 0.15

    def _mask(self, tokens: torch.Tensor) -> Batch:
        batch, length = tokens.shape
        # A fixed count per sequence, not a Bernoulli draw: a draw can mask nothing in
        # a short sequence, and a loss over no targets is NaN.
        count = max(1, round(self.MASK_FRACTION * length))
        chosen = torch.rand(batch, length, device=tokens.device).topk(count, dim=1).indices
        masked = torch.zeros_like(tokens, dtype=torch.bool).scatter_(1, chosen, True)
        return tokens.masked_fill(masked, self.MASK_ID), tokens.masked_fill(~masked, -100)

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Masked random tokens and the original ids at the masked positions (-100
        elsewhere)."""
        length = self.input_shape[0]
        return self._mask(torch.randint(0, self._vocab(), (batch_size, length), device=device))

    def real_batch(self, inputs: torch.Tensor, targets: torch.Tensor) -> Batch:
        """Mask the loader's tokens; its next-token targets are not BERT's task."""
        return self._mask(inputs)

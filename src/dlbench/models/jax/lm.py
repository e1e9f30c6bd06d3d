"""BERT-base (masked LM) and GPT-2 small (causal LM) in Flax, as
``dlbench.models.pytorch.lm`` defines them: the same fused QKV projection, post-norm
(BERT) or pre-norm (GPT-2) blocks, GELU (exact for BERT, tanh for GPT-2), output
projections tied to the token embeddings, BERT's head bias and unused second token
type, position tables of 512 (BERT) and 1,024 (GPT-2) positions or the sequence
length when longer. Parameter counts: 109,514,298 and 124,439,808.

Attention is written out (scores, softmax, dropout on the probabilities, weighted
sum), which is what PyTorch's ``scaled_dot_product_attention`` computes with
``dropout_p=0.1`` in training; XLA fuses it as it can.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn

from dlbench.models.jax.layers import compact, normal_init

_NORMAL = normal_init(0.02)  # BERT's and GPT-2's weights; biases are zeros


def _dense(features: int, dtype: Any, std: float = 0.02, name: str | None = None) -> nn.Dense:
    return nn.Dense(features, dtype=dtype, param_dtype=jnp.float32, name=name,
                    kernel_init=normal_init(std))


class FlaxTransformerBlock(nn.Module):  # type: ignore[misc]  # flax is not type-checked
    """Self-attention and a GELU MLP, each with a residual and dropout."""

    dim: int
    heads: int
    hidden: int
    pre_norm: bool
    causal: bool
    eps: float
    tanh_gelu: bool
    out_std: float = 0.02  # GPT-2 scales the projections into the residual stream
    dropout: float = 0.1
    dtype: Any = jnp.float32

    def _attention(self, x: Any, train: bool) -> Any:
        batch, length, dim = x.shape
        depth = dim // self.heads
        qkv = _dense(3 * dim, self.dtype, name="qkv")(x)
        q, k, v = (t.reshape(batch, length, self.heads, depth) for t in jnp.split(qkv, 3, -1))
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(depth)
        if self.causal:
            allowed = jnp.tril(jnp.ones((length, length), dtype=bool))
            scores = jnp.where(allowed, scores, jnp.finfo(scores.dtype).min)
        # Softmax in float32 under mixed precision, as autocast does.
        probs = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(self.dtype)
        probs = nn.Dropout(self.dropout, deterministic=not train)(probs)
        y = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(batch, length, dim)
        y = _dense(dim, self.dtype, self.out_std, name="attn_out")(y)
        return nn.Dropout(self.dropout, deterministic=not train)(y)

    def _mlp(self, x: Any, train: bool) -> Any:
        x = _dense(self.hidden, self.dtype, name="fc1")(x)
        x = nn.gelu(x, approximate=self.tanh_gelu)
        x = _dense(self.dim, self.dtype, self.out_std, name="fc2")(x)
        return nn.Dropout(self.dropout, deterministic=not train)(x)

    @compact
    def __call__(self, x: Any, train: bool = False) -> Any:
        """``(B, T, dim)`` → ``(B, T, dim)``."""
        norm1 = nn.LayerNorm(self.eps, dtype=self.dtype, param_dtype=jnp.float32, name="norm1")
        norm2 = nn.LayerNorm(self.eps, dtype=self.dtype, param_dtype=jnp.float32, name="norm2")
        if self.pre_norm:
            x = x + self._attention(norm1(x), train)
            return x + self._mlp(norm2(x), train)
        x = norm1(x + self._attention(x, train))
        return norm2(x + self._mlp(x, train))


def _embed(count: int, dim: int, dtype: Any, name: str) -> nn.Embed:
    return nn.Embed(count, dim, dtype=dtype, param_dtype=jnp.float32,
                    embedding_init=_NORMAL, name=name)


class FlaxBertMaskedLM(nn.Module):  # type: ignore[misc]
    """BERT with its masked-LM head, as ``BertForMaskedLM``: no pooler; the decoder
    shares the word embeddings and has its own bias."""

    vocab_size: int = 30522
    dim: int = 768
    layers: int = 12
    heads: int = 12
    max_positions: int = 512
    dtype: Any = jnp.float32

    @compact
    def __call__(self, tokens: Any, train: bool = False) -> Any:
        """Logits ``(B, T, vocab)`` for token ids ``(B, T)`` (one segment, no padding)."""
        word = _embed(self.vocab_size, self.dim, self.dtype, "word")
        position = _embed(self.max_positions, self.dim, self.dtype, "position")
        # Two token types, as BERT has; a single segment uses type 0 only.
        token_type = _embed(2, self.dim, self.dtype, "token_type")
        x = word(tokens) + position(jnp.arange(tokens.shape[1])) + token_type(jnp.zeros((), int))
        x = nn.LayerNorm(1e-12, dtype=self.dtype, param_dtype=jnp.float32, name="embed_norm")(x)
        x = nn.Dropout(0.1, deterministic=not train)(x)
        for index in range(self.layers):
            x = FlaxTransformerBlock(self.dim, self.heads, 4 * self.dim, pre_norm=False,
                                 causal=False, eps=1e-12, tanh_gelu=False, dtype=self.dtype,
                                 name=f"block{index}")(x, train)
        x = nn.gelu(_dense(self.dim, self.dtype, name="head_dense")(x), approximate=False)
        x = nn.LayerNorm(1e-12, dtype=self.dtype, param_dtype=jnp.float32, name="head_norm")(x)
        bias = self.param("head_bias", nn.initializers.zeros, (self.vocab_size,), jnp.float32)
        return word.attend(x) + bias.astype(self.dtype)


class FlaxGPT2(nn.Module):  # type: ignore[misc]
    """GPT-2: pre-norm blocks, tanh GELU, a final LayerNorm, and the output projection
    tied to the token embeddings."""

    vocab_size: int = 50257
    dim: int = 768
    layers: int = 12
    heads: int = 12
    max_positions: int = 1024
    dtype: Any = jnp.float32

    @compact
    def __call__(self, tokens: Any, train: bool = False) -> Any:
        """Next-token logits ``(B, T, vocab)`` for token ids ``(B, T)``."""
        wte = _embed(self.vocab_size, self.dim, self.dtype, "wte")
        wpe = _embed(self.max_positions, self.dim, self.dtype, "wpe")
        x = wte(tokens) + wpe(jnp.arange(tokens.shape[1]))
        x = nn.Dropout(0.1, deterministic=not train)(x)
        out_std = 0.02 / math.sqrt(2 * self.layers)
        for index in range(self.layers):
            x = FlaxTransformerBlock(self.dim, self.heads, 4 * self.dim, pre_norm=True,
                                 causal=True, eps=1e-5, tanh_gelu=True, out_std=out_std,
                                 dtype=self.dtype, name=f"block{index}")(x, train)
        x = nn.LayerNorm(1e-5, dtype=self.dtype, param_dtype=jnp.float32, name="norm")(x)
        return wte.attend(x)


def bert_base(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """BERT-base for sequences of ``input_shape == (T,)`` over ``num_classes`` token ids."""
    return FlaxBertMaskedLM(vocab_size=num_classes, max_positions=max(512, input_shape[0]),
                        dtype=dtype)


def gpt2_small(input_shape: tuple[int, ...], num_classes: int, dtype: Any) -> nn.Module:
    """GPT-2 small (124M) for sequences of ``input_shape == (T,)``."""
    return FlaxGPT2(vocab_size=num_classes, max_positions=max(1024, input_shape[0]), dtype=dtype)

"""BERT-base (masked LM) and GPT-2 small (causal LM) in Keras, as
``dlbench.models.pytorch.lm``.

The same layout as the PyTorch definitions, and so the same parameter counts
(``BertForMaskedLM``'s 109,514,298 and GPT-2 small's 124,439,808): a fused Q, K, V
projection, attention written out (scaled dot products, a causal mask for GPT-2,
dropout on the attention weights in training as PyTorch's
``scaled_dot_product_attention`` has it), a GELU MLP, post-norm blocks for BERT and
pre-norm blocks for GPT-2, and output projections tied to the word embeddings (BERT's
with its own bias). The softmax of the attention runs in float32 under mixed
precision, as PyTorch's kernels accumulate it.
"""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf


def _normal(std: float = 0.02) -> keras.initializers.Initializer:
    """BERT's and GPT-2's initialisation: N(0, std) weights (biases are zeros)."""
    return keras.initializers.RandomNormal(0.0, std)


class KerasTransformerBlock(keras.layers.Layer):  # type: ignore[misc]  # keras is not type-checked
    """Self-attention and a GELU MLP, each with a residual; post-norm (BERT) or
    pre-norm (GPT-2)."""

    def __init__(
        self, dim: int, heads: int, hidden: int, *, pre_norm: bool, causal: bool,
        eps: float, approximate_gelu: bool, residual_std: float = 0.02,
        dropout: float = 0.1, **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.dim = dim
        self.heads = heads
        self.hidden = hidden
        self.pre_norm = pre_norm
        self.causal = causal
        self.approximate_gelu = approximate_gelu
        self.qkv = keras.layers.Dense(3 * dim, kernel_initializer=_normal())
        self.attn_out = keras.layers.Dense(dim, kernel_initializer=_normal(residual_std))
        self.norm1 = keras.layers.LayerNormalization(epsilon=eps)
        self.fc1 = keras.layers.Dense(hidden, kernel_initializer=_normal())
        self.fc2 = keras.layers.Dense(dim, kernel_initializer=_normal(residual_std))
        self.norm2 = keras.layers.LayerNormalization(epsilon=eps)
        self.attn_dropout = keras.layers.Dropout(dropout)
        self.dropout = keras.layers.Dropout(dropout)

    def build(self, input_shape: tuple[Any, ...]) -> None:
        """Create the weights of every sublayer for inputs ``(B, T, dim)``."""
        for layer in (self.qkv, self.attn_out, self.norm1, self.fc1, self.norm2):
            layer.build(input_shape)
        self.fc2.build((*input_shape[:-1], self.hidden))
        self.built = True

    def _attention(self, x: tf.Tensor, training: bool) -> tf.Tensor:
        length = int(x.shape[1])
        depth = self.dim // self.heads
        qkv = tf.reshape(self.qkv(x), (-1, length, 3, self.heads, depth))
        # (3, B, heads, T, depth)
        query, key, value = tf.unstack(tf.transpose(qkv, (2, 0, 3, 1, 4)))
        scores = tf.matmul(query, key, transpose_b=True)
        scores = tf.cast(scores, tf.float32) * (1.0 / math.sqrt(depth))
        if self.causal:
            allowed = tf.linalg.band_part(tf.ones((length, length), tf.bool), -1, 0)
            scores = tf.where(allowed, scores, tf.float32.min)
        weights = tf.cast(tf.nn.softmax(scores, axis=-1), value.dtype)
        weights = self.attn_dropout(weights, training=training)
        out = tf.transpose(tf.matmul(weights, value), (0, 2, 1, 3))
        out = tf.reshape(out, (-1, length, self.dim))
        return self.dropout(self.attn_out(out), training=training)

    def _mlp(self, x: tf.Tensor, training: bool) -> tf.Tensor:
        hidden = tf.nn.gelu(self.fc1(x), approximate=self.approximate_gelu)
        return self.dropout(self.fc2(hidden), training=training)

    def call(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        """``(B, T, dim)`` → ``(B, T, dim)``."""
        if self.pre_norm:
            x = x + self._attention(self.norm1(x), training)
            return x + self._mlp(self.norm2(x), training)
        x = self.norm1(x + self._attention(x, training))
        return self.norm2(x + self._mlp(x, training))


def _tied_logits(x: tf.Tensor, embeddings: Any) -> tf.Tensor:
    """``x @ E^T`` for the word embedding table ``E`` (``vocab x dim``), in ``x``'s dtype."""
    table = tf.cast(embeddings, x.dtype)
    return tf.einsum("btd,vd->btv", x, table)


class KerasBertMaskedLM(keras.Model):  # type: ignore[misc]
    """BERT with its masked-LM head, as ``BertForMaskedLM``: no pooler; the decoder
    shares the word embeddings and has its own bias."""

    def __init__(
        self, vocab_size: int = 30522, dim: int = 768, layers: int = 12, heads: int = 12,
        max_positions: int = 512, **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.dim = dim
        self.word = keras.layers.Embedding(vocab_size, dim, embeddings_initializer=_normal())
        self.position = keras.layers.Embedding(
            max_positions, dim, embeddings_initializer=_normal()
        )
        self.token_type = keras.layers.Embedding(2, dim, embeddings_initializer=_normal())
        self.embed_norm = keras.layers.LayerNormalization(epsilon=1e-12)
        self.dropout = keras.layers.Dropout(0.1)
        self.blocks = [
            KerasTransformerBlock(dim, heads, 4 * dim, pre_norm=False, causal=False, eps=1e-12,
                             approximate_gelu=False)
            for _ in range(layers)
        ]
        self.head_dense = keras.layers.Dense(dim, kernel_initializer=_normal())
        self.head_norm = keras.layers.LayerNormalization(epsilon=1e-12)

    def build(self, input_shape: tuple[Any, ...]) -> None:
        """Create every weight for token ids ``(B, T)``."""
        for embedding in (self.word, self.position, self.token_type):
            embedding.build(input_shape)
        hidden = (*input_shape, self.dim)
        for layer in (self.embed_norm, *self.blocks, self.head_dense, self.head_norm):
            layer.build(hidden)
        self.head_bias = self.add_weight(
            shape=(self.vocab_size,), initializer="zeros", name="head_bias"
        )
        self.built = True

    def call(self, tokens: tf.Tensor, training: bool = False) -> tf.Tensor:
        """Logits ``(B, T, vocab)`` for token ids ``(B, T)`` (one segment, no padding)."""
        positions = tf.range(tf.shape(tokens)[1])
        # A single segment: every token has type 0.
        x = self.word(tokens) + self.position(positions) + self.token_type(tf.zeros((), tf.int32))
        x = self.dropout(self.embed_norm(x), training=training)
        for block in self.blocks:
            x = block(x, training=training)
        x = self.head_norm(tf.nn.gelu(self.head_dense(x), approximate=False))
        return _tied_logits(x, self.word.embeddings) + tf.cast(self.head_bias, x.dtype)


class KerasGPT2(keras.Model):  # type: ignore[misc]
    """GPT-2: pre-norm blocks, tanh GELU, a final LayerNorm, and the output projection
    tied to the token embeddings."""

    def __init__(
        self, vocab_size: int = 50257, dim: int = 768, layers: int = 12, heads: int = 12,
        max_positions: int = 1024, **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.dim = dim
        self.wte = keras.layers.Embedding(vocab_size, dim, embeddings_initializer=_normal())
        self.wpe = keras.layers.Embedding(max_positions, dim, embeddings_initializer=_normal())
        self.dropout = keras.layers.Dropout(0.1)
        # GPT-2 scales the projections into the residual stream by 1/sqrt(2 * layers).
        residual_std = 0.02 / math.sqrt(2 * layers)
        self.blocks = [
            KerasTransformerBlock(dim, heads, 4 * dim, pre_norm=True, causal=True, eps=1e-5,
                             approximate_gelu=True, residual_std=residual_std)
            for _ in range(layers)
        ]
        self.norm = keras.layers.LayerNormalization(epsilon=1e-5)

    def build(self, input_shape: tuple[Any, ...]) -> None:
        """Create every weight for token ids ``(B, T)``."""
        self.wte.build(input_shape)
        self.wpe.build(input_shape)
        hidden = (*input_shape, self.dim)
        for layer in (*self.blocks, self.norm):
            layer.build(hidden)
        self.built = True

    def call(self, tokens: tf.Tensor, training: bool = False) -> tf.Tensor:
        """Next-token logits ``(B, T, vocab)`` for token ids ``(B, T)``."""
        positions = tf.range(tf.shape(tokens)[1])
        x = self.dropout(self.wte(tokens) + self.wpe(positions), training=training)
        for block in self.blocks:
            x = block(x, training=training)
        return _tied_logits(self.norm(x), self.wte.embeddings)


def _built(model: keras.Model, input_shape: tuple[int, ...]) -> keras.Model:
    model.build((None, *input_shape))
    return model


def bert_base(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """BERT-base for sequences of ``input_shape == (T,)`` over ``num_classes`` token ids;
    the position table grows past 512 only for longer sequences."""
    model = KerasBertMaskedLM(vocab_size=num_classes, max_positions=max(512, input_shape[0]),
                         name="bert_base")
    return _built(model, input_shape)


def gpt2_small(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """GPT-2 small (124M) for sequences of ``input_shape == (T,)``."""
    model = KerasGPT2(vocab_size=num_classes, max_positions=max(1024, input_shape[0]),
                 name="gpt2_small")
    return _built(model, input_shape)

"""The configurations of well-known Hugging Face Transformers models, as facts.

Each entry is the part of the model's published ``config.json`` that fixes its shape
(widths, depths, heads, vocabulary, positions, tied embeddings, biases): the rest of a
configuration is left to the ``transformers`` configuration class's defaults, which do
not change the parameter count or the FLOPs. ``exp.model=hf:<name>`` builds the model
from its entry with random weights; nothing is downloaded. The published parameter
counts are checked in the tests against the model ``transformers`` builds from these
entries on PyTorch's ``meta`` device.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ShippedConfig:
    """A configuration dlbench ships: its name in ``hf:<name>``, the model's title and
    the Hugging Face repository it is taken from, and its ``config.json`` facts."""

    name: str
    title: str
    repository: str
    config: Mapping[str, Any] = field(hash=False)


def _llama(vocab: int, hidden: int, layers: int, heads: int, kv_heads: int,
           intermediate: int, positions: int, tied: bool, **extra: Any) -> dict[str, Any]:
    """A Llama-layout decoder's facts (Llama, Mistral, Qwen2 and Phi-3 share them)."""
    return {"model_type": "llama", "vocab_size": vocab, "hidden_size": hidden,
            "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv_heads, "intermediate_size": intermediate,
            "max_position_embeddings": positions, "tie_word_embeddings": tied, **extra}


#: The shipped configurations, in the order ``dlbench help --models`` lists them.
SHIPPED: tuple[ShippedConfig, ...] = (
    ShippedConfig("gpt2", "GPT-2", "openai-community/gpt2", {
        "model_type": "gpt2", "vocab_size": 50257, "n_embd": 768, "n_layer": 12,
        "n_head": 12, "n_inner": None, "n_positions": 1024, "tie_word_embeddings": True}),
    ShippedConfig("bert-base-uncased", "BERT-base (uncased)", "google-bert/bert-base-uncased", {
        "model_type": "bert", "vocab_size": 30522, "hidden_size": 768,
        "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
        "max_position_embeddings": 512, "type_vocab_size": 2}),
    ShippedConfig("bert-large-uncased", "BERT-large (uncased)",
                  "google-bert/bert-large-uncased", {
        "model_type": "bert", "vocab_size": 30522, "hidden_size": 1024,
        "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096,
        "max_position_embeddings": 512, "type_vocab_size": 2}),
    ShippedConfig("roberta-base", "RoBERTa-base", "FacebookAI/roberta-base", {
        "model_type": "roberta", "vocab_size": 50265, "hidden_size": 768,
        "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
        "max_position_embeddings": 514, "type_vocab_size": 1, "pad_token_id": 1}),
    ShippedConfig("t5-small", "T5-small", "google-t5/t5-small", {
        "model_type": "t5", "vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048,
        "num_layers": 6, "num_decoder_layers": 6, "num_heads": 8,
        "relative_attention_num_buckets": 32, "feed_forward_proj": "relu",
        "tie_word_embeddings": True}),
    ShippedConfig("vit-base-patch16-224", "ViT-B/16", "google/vit-base-patch16-224", {
        "model_type": "vit", "hidden_size": 768, "num_hidden_layers": 12,
        "num_attention_heads": 12, "intermediate_size": 3072, "image_size": 224,
        "patch_size": 16, "num_channels": 3, "qkv_bias": True, "num_labels": 1000}),
    ShippedConfig("llama-3.2-1b", "Llama-3.2-1B", "meta-llama/Llama-3.2-1B", _llama(
        128256, 2048, 16, 32, 8, 8192, 131072, True, rope_theta=500000.0)),
    ShippedConfig("llama-3.2-3b", "Llama-3.2-3B", "meta-llama/Llama-3.2-3B", _llama(
        128256, 3072, 28, 24, 8, 8192, 131072, True, rope_theta=500000.0)),
    ShippedConfig("llama-3.1-8b", "Llama-3.1-8B", "meta-llama/Llama-3.1-8B", _llama(
        128256, 4096, 32, 32, 8, 14336, 131072, False, rope_theta=500000.0)),
    ShippedConfig("qwen2.5-0.5b", "Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B", {
        **_llama(151936, 896, 24, 14, 2, 4864, 32768, True, rope_theta=1000000.0),
        "model_type": "qwen2"}),
    ShippedConfig("qwen2.5-7b", "Qwen2.5-7B", "Qwen/Qwen2.5-7B", {
        **_llama(152064, 3584, 28, 28, 4, 18944, 131072, False, rope_theta=1000000.0),
        "model_type": "qwen2"}),
    ShippedConfig("mistral-7b", "Mistral-7B (v0.1)", "mistralai/Mistral-7B-v0.1", {
        **_llama(32000, 4096, 32, 32, 8, 14336, 32768, False, sliding_window=4096),
        "model_type": "mistral"}),
    ShippedConfig("phi-3-mini", "Phi-3-mini (4k)", "microsoft/Phi-3-mini-4k-instruct", {
        **_llama(32064, 3072, 32, 32, 32, 8192, 4096, False, sliding_window=2047,
                 original_max_position_embeddings=4096),
        "model_type": "phi3"}),
)

#: The shipped configurations by name.
SHIPPED_BY_NAME: dict[str, ShippedConfig] = {entry.name: entry for entry in SHIPPED}

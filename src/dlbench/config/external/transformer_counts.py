"""Parameters and FLOPs per sample of a Hugging Face Transformers model, from its
configuration alone (no ``transformers``, no ``torch``: the planner and ``dlbench help``
count them).

The parameter counts are the layouts ``transformers`` builds, family by family; the
tests build every shipped configuration with ``transformers`` on the ``meta`` device and
check that both agree with the published counts. The FLOPs are the standard formula of
a transformer's matrix products (two FLOPs per multiply-add):

- per token, forward: ``2 N + 4 L d T`` (Kaplan et al. 2020, "Scaling Laws for Neural
  Language Models", section 2.1: ``C_forward = 2 N + 2 n_layer n_ctx d_attn``, whose
  second term counts one of attention's two products of ``T x d`` by ``d x T`` size; the
  ``Q K^T`` and ``P V`` products are counted here), where ``N`` is the parameters of
  every matrix product a token goes through (the embedding lookups excluded, the output
  projection included even when it is tied to the token table), ``L`` the layers, ``d``
  the attention width (heads x head size) and ``T`` the tokens the attention spans;
- training: three times the forward (the backward pass costs two forwards), which gives
  PaLM's ``6 N + 12 L H Q T`` per token (Chowdhery et al. 2022, appendix B) with
  ``d = H Q``;
- attention is counted over the whole sequence, as both papers do, not the half a
  causal mask leaves.

T5 sums its encoder (over the source tokens), its decoder (over the target tokens) and
the cross-attention between them; ViT runs its layers over the patches and the class
token, its patch projection over the patches and its classifier once per image.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ALIASES",
    "COUNTED_TYPES",
    "Counts",
    "field_name",
    "flops_per_sample",
    "num_labels",
    "parameter_counts",
    "setting",
]

#: The configuration's names of the generic sizes where a model type has names of its
#: own (``transformers``' ``attribute_map`` of those configuration classes).
ALIASES: dict[str, dict[str, str]] = {
    "gpt2": {"hidden_size": "n_embd", "num_hidden_layers": "n_layer",
             "num_attention_heads": "n_head", "max_position_embeddings": "n_positions",
             "intermediate_size": "n_inner"},
    "t5": {"hidden_size": "d_model", "num_hidden_layers": "num_layers",
           "num_attention_heads": "num_heads", "intermediate_size": "d_ff"},
}

#: Decoders with Llama's layout: rotary positions, RMS norms, a gated MLP.
_LLAMA_LIKE = ("llama", "mistral", "qwen2", "phi3")
#: BERT-like encoders, with their masked-language-model head.
_ENCODERS = ("bert", "roberta")
#: The model types whose parameters and FLOPs are counted here.
COUNTED_TYPES: tuple[str, ...] = (*_LLAMA_LIKE, "gpt2", *_ENCODERS, "t5", "vit")

#: The configuration classes' defaults these counts read when a config.json leaves them
#: out (``transformers``' configuration classes).
_TIED_DEFAULT = {"gpt2": True, "t5": True, "bert": True, "roberta": True}


def field_name(model_type: str, name: str) -> str:
    """The configuration's own name of the generic size ``name`` for ``model_type``
    (``n_embd`` for GPT-2's ``hidden_size``)."""
    return ALIASES.get(model_type, {}).get(name, name)


def setting(config: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """The value of the generic size ``name`` in ``config`` (under its own name for the
    model type), or ``default`` when absent or null."""
    value = config.get(field_name(str(config.get("model_type", "")), name))
    return default if value is None else value


@dataclass(frozen=True)
class Counts:
    """A model's parameters by role."""

    embeddings: int  # lookup tables: tokens, positions, token types, ViT's class token
    layers: int  # the transformer layers and final norms
    head: int  # the output side: projection matrix (counted even when tied) and extras
    tied: int  # parameters of ``head`` that are the token table itself (0: untied)

    @property
    def total(self) -> int:
        """Every parameter once (a tied matrix once)."""
        return self.embeddings + self.layers + self.head - self.tied


def _ints(config: Mapping[str, Any], *names: str) -> list[int]:
    return [int(setting(config, name)) for name in names]


def _llama_counts(config: Mapping[str, Any]) -> Counts:
    vocab, hidden, layers, heads, inter = _ints(
        config, "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
        "intermediate_size")
    kv_heads = int(setting(config, "num_key_value_heads", heads))
    head_dim = int(setting(config, "head_dim", hidden // heads))
    q, kv = heads * head_dim, kv_heads * head_dim
    attention = hidden * q + 2 * hidden * kv + q * hidden
    model_type = config["model_type"]
    if model_type == "qwen2":  # Qwen2's q, k and v projections always have biases
        attention += q + 2 * kv
    elif config.get("attention_bias"):
        attention += q + 2 * kv + hidden
    mlp = 3 * hidden * inter + ((2 * inter + hidden) if config.get("mlp_bias") else 0)
    per_layer = attention + mlp + 2 * hidden  # two RMS norms
    tied = bool(config.get("tie_word_embeddings", _TIED_DEFAULT.get(model_type, False)))
    return Counts(vocab * hidden, layers * per_layer + hidden, vocab * hidden,
                  vocab * hidden if tied else 0)


def _encoder_layer(hidden: int, inter: int, qkv_bias: bool = True) -> int:
    """A BERT or ViT layer: q, k, v and output projections, the MLP, two layer norms."""
    return (3 * hidden * hidden + (3 * hidden if qkv_bias else 0) + hidden * hidden + hidden
            + hidden * inter + inter + inter * hidden + hidden + 4 * hidden)


def _gpt2_counts(config: Mapping[str, Any]) -> Counts:
    vocab, hidden, layers, positions = _ints(
        config, "vocab_size", "hidden_size", "num_hidden_layers", "max_position_embeddings")
    inter = int(setting(config, "intermediate_size", 4 * hidden))
    tied = bool(config.get("tie_word_embeddings", True))
    return Counts(vocab * hidden + positions * hidden,
                  layers * _encoder_layer(hidden, inter) + 2 * hidden, vocab * hidden,
                  vocab * hidden if tied else 0)


def _encoder_counts(config: Mapping[str, Any]) -> Counts:
    vocab, hidden, layers, inter, positions = _ints(
        config, "vocab_size", "hidden_size", "num_hidden_layers", "intermediate_size",
        "max_position_embeddings")
    types = int(setting(config, "type_vocab_size", 2))
    # The masked-LM head: a dense transform and its layer norm, the tied decoder, a bias.
    head = hidden * hidden + hidden + 2 * hidden + vocab * hidden + vocab
    tied = bool(config.get("tie_word_embeddings", True))
    return Counts((vocab + positions + types) * hidden + 2 * hidden,
                  layers * _encoder_layer(hidden, inter), head, vocab * hidden if tied else 0)


def _t5_parts(config: Mapping[str, Any]) -> tuple[int, int, int, int, int, int]:
    """T5's encoder layers, decoder layers (each with its final norm and relative
    position table), the cross-attention's key and value projections of the decoder,
    and the vocabulary, width and attention width."""
    vocab, hidden, layers, heads = _ints(
        config, "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads")
    inter = int(setting(config, "intermediate_size", 2048))
    decoder_layers = int(config.get("num_decoder_layers") or layers)
    attention_width = heads * int(config.get("d_kv", 64))
    buckets = int(config.get("relative_attention_num_buckets", 32))
    gated = str(config.get("feed_forward_proj", "relu")).startswith("gated-")
    mlp = (3 if gated else 2) * hidden * inter
    attention = 4 * hidden * attention_width
    encoder = layers * (attention + mlp + 2 * hidden) + buckets * heads + hidden
    decoder = decoder_layers * (2 * attention + mlp + 3 * hidden) + buckets * heads + hidden
    cross_kv = decoder_layers * 2 * hidden * attention_width
    return encoder, decoder, cross_kv, vocab, hidden, attention_width


def _t5_counts(config: Mapping[str, Any]) -> Counts:
    encoder, decoder, _, vocab, hidden, _ = _t5_parts(config)
    tied = bool(config.get("tie_word_embeddings", True))
    return Counts(vocab * hidden, encoder + decoder, vocab * hidden,
                  vocab * hidden if tied else 0)


def _vit_parts(config: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """ViT's patches per image, patch projection, classifier and width."""
    hidden, image, patch = _ints(config, "hidden_size", "image_size", "patch_size")
    channels = int(config.get("num_channels", 3))
    labels = num_labels(config)
    return ((image // patch) ** 2, channels * patch * patch * hidden + hidden,
            hidden * labels + labels, hidden)


def num_labels(config: Mapping[str, Any]) -> int:
    """The classifier's outputs: ``num_labels``, else the ``id2label`` entries, else
    ``transformers``' default of 2."""
    if config.get("num_labels"):
        return int(config["num_labels"])
    return len(config.get("id2label") or {}) or 2


def _vit_counts(config: Mapping[str, Any]) -> Counts:
    hidden, layers, inter = _ints(config, "hidden_size", "num_hidden_layers",
                                  "intermediate_size")
    patches, projection, classifier, _ = _vit_parts(config)
    layer = _encoder_layer(hidden, inter, bool(config.get("qkv_bias", True)))
    # The patch projection is a matrix product, counted with the layers.
    return Counts(hidden + (patches + 1) * hidden, layers * layer + 2 * hidden + projection,
                  classifier, 0)


def parameter_counts(config: Mapping[str, Any]) -> Counts:
    """The parameters of the model ``transformers`` builds from ``config`` with its
    task's head (causal LM, masked LM, sequence-to-sequence LM, image classifier).
    KeyError for a model type not in :data:`COUNTED_TYPES` or a size it lacks.

    >>> parameter_counts({"model_type": "llama", "vocab_size": 10, "hidden_size": 4,
    ...     "num_hidden_layers": 1, "num_attention_heads": 2,
    ...     "intermediate_size": 8}).total  # 40 + (64 + 96 + 8) + 4 + 40
    252
    """
    model_type = str(config.get("model_type"))
    if model_type in _LLAMA_LIKE:
        return _llama_counts(config)
    if model_type == "gpt2":
        return _gpt2_counts(config)
    if model_type in _ENCODERS:
        return _encoder_counts(config)
    if model_type == "t5":
        return _t5_counts(config)
    if model_type == "vit":
        return _vit_counts(config)
    raise KeyError(f"model type {model_type!r} is not counted; counted: "
                   f"{', '.join(COUNTED_TYPES)}")


def _attention_width(config: Mapping[str, Any]) -> int:
    hidden, heads = _ints(config, "hidden_size", "num_attention_heads")
    return heads * int(setting(config, "head_dim", hidden // heads))


def flops_per_sample(config: Mapping[str, Any], training: bool, tokens: int) -> float:
    """FLOPs of one sample of the model of ``config``: forward, or forward and backward
    when ``training`` (the module docstring has the formula). ``tokens`` is the
    sequence length (T5: the source's and the target's each); ViT's come from its
    image and patch sizes. KeyError for a model type that is not counted.

    >>> config = {"model_type": "llama", "vocab_size": 10, "hidden_size": 4,
    ...           "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 8}
    >>> flops_per_sample(config, False, 3)  # 3 x (2 x (172 + 40) + 4 x 1 x 4 x 3)
    1416.0
    """
    model_type = str(config.get("model_type"))
    if model_type == "t5":
        encoder, decoder, cross_kv, vocab, hidden, width = _t5_parts(config)
        layers = int(setting(config, "num_hidden_layers"))
        decoder_layers = int(config.get("num_decoder_layers") or layers)
        # The cross-attention's keys and values project the source tokens.
        forward = (2 * encoder * tokens + 2 * cross_kv * tokens
                   + 2 * (decoder - cross_kv + vocab * hidden) * tokens
                   + 4 * layers * width * tokens * tokens
                   + 2 * 4 * decoder_layers * width * tokens * tokens)
    elif model_type == "vit":
        counts = parameter_counts(config)
        patches, projection, classifier, hidden = _vit_parts(config)
        length = patches + 1
        layers = int(setting(config, "num_hidden_layers"))
        forward = (2 * (counts.layers - projection) * length + 2 * projection * patches
                   + 2 * classifier + 4 * layers * _attention_width(config) * length * length)
    else:
        counts = parameter_counts(config)
        layers = int(setting(config, "num_hidden_layers"))
        forward = (2 * (counts.layers + counts.head) * tokens
                   + 4 * layers * _attention_width(config) * tokens * tokens)
    return float(3 * forward if training else forward)

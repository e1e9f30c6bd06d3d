"""Hugging Face Transformers models, built from their configuration with random
weights (``from_config``: never ``from_pretrained``), and their workloads.

The configuration is the one the planner resolved (``ModelInfo.source_config``:
:mod:`dlbench.config.external.huggingface`). Every step uses the model's own loss
(``labels=``): next-token prediction for a causal LM, the masked tokens for BERT and
RoBERTa, the target sequence for T5, the labels for ViT. ``transformers`` is imported
when a model is built, with the Hub switched off first: nothing reaches a network.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from dlbench.config.modelinfo import ModelInfo
from dlbench.models.pytorch.lm import MaskedLMWorkload
from dlbench.models.pytorch.translation import TranslationWorkload
from dlbench.models.pytorch.workload_base import Batch, Workload, token_batch

__all__ = ["TransformersDecoder", "build", "transformers_workload"]

#: The Auto class of ``transformers`` that builds each task's model with its head.
_AUTO_CLASSES = {"causal_lm": "AutoModelForCausalLM", "masked_lm": "AutoModelForMaskedLM",
                 "translation": "AutoModelForSeq2SeqLM",
                 "classification": "AutoModelForImageClassification"}
#: Special token ids a configuration may set, cleared when a smaller vocabulary
#: (hf.vocab_size) no longer holds them.
_TOKEN_IDS = ("bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id")


def _offline() -> None:
    """No download, no Hub query: set before ``transformers`` (and ``huggingface_hub``,
    which read them when imported) is imported, and kept for the worker's life."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def build(config: Mapping[str, Any], task: str) -> nn.Module:
    """The ``transformers`` model of ``config`` (``config.json``'s keys) with ``task``'s
    head, randomly initialised on the default device (a ``torch.device`` context puts it
    elsewhere, ``meta`` included)."""
    _offline()
    import transformers

    settings = dict(config)
    built = transformers.AutoConfig.for_model(settings.pop("model_type"), **settings)
    vocab = getattr(built, "vocab_size", None)
    for name in _TOKEN_IDS:
        value = getattr(built, name, None)
        if isinstance(value, int) and isinstance(vocab, int) and value >= vocab:
            setattr(built, name, None)
    return getattr(transformers, _AUTO_CLASSES[task]).from_config(built)


class _Built:
    """Builds the model from the resolved configuration."""

    info: ModelInfo

    def build(self) -> nn.Module:
        """The model with random weights."""
        return build(self.info.source_config, self.info.task)


class CausalLMTransformersWorkload(_Built, Workload):
    """A decoder (GPT-2, Llama, Qwen2, Mistral, Phi-3): random tokens, the model's
    next-token loss (it shifts the labels itself); throughput in tokens."""

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Random token ids ``(B, T)``, and the same ids as the labels."""
        tokens, _ = token_batch(batch_size, self.input_shape[0],
                                int(self.info.vocab_size or 1), device)
        return tokens, tokens

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The model's own loss; no key-value cache is kept in training."""
        return model(input_ids=inputs, labels=targets, use_cache=False).loss

    def infer(self, model: Any, inputs: torch.Tensor) -> Any:
        """A forward pass over the sequence: every position's logits."""
        return model(input_ids=inputs, use_cache=False).logits

    def throughput_unit(self, training: bool) -> tuple[str, float]:
        """Tokens: a sample is a sequence of ``T``."""
        return "tokens/s", float(self.input_shape[0])


class MaskedLMTransformersWorkload(_Built, MaskedLMWorkload):
    """BERT and RoBERTa: 15% of the positions masked (the zoo's bert_base rule), the
    model's own masked-LM loss."""

    def __init__(self, info: ModelInfo, input_shape: tuple[int, ...],
                 seq_len: int | None) -> None:
        super().__init__(info, input_shape, seq_len)
        # BERT's [MASK] where the vocabulary holds it (a shrunk one may not).
        self.MASK_ID = min(MaskedLMWorkload.MASK_ID, int(info.vocab_size or 1) - 1)

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The model's loss over the masked positions (the others are -100)."""
        return model(input_ids=inputs, labels=targets).loss

    def infer(self, model: Any, inputs: torch.Tensor) -> Any:
        """Every position's logits."""
        return model(input_ids=inputs).logits


class Seq2SeqWorkload(_Built, TranslationWorkload):
    """T5: source and target sequences of ``T`` tokens, the model's own loss (it
    shifts the labels right into the decoder's inputs)."""

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The model's cross-entropy over the target tokens."""
        return model(input_ids=inputs[:, 0], labels=targets, use_cache=False).loss

    def infer(self, model: Any, inputs: torch.Tensor) -> Any:
        """Encoder over the source, decoder over the target: every target logit."""
        return model(input_ids=inputs[:, 0], decoder_input_ids=inputs[:, 1],
                     use_cache=False).logits


class ImageClassifierWorkload(_Built, Workload):
    """ViT: random images and labels, the model's own cross-entropy."""

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The model's cross-entropy."""
        return model(pixel_values=inputs, labels=targets).loss

    def infer(self, model: Any, inputs: torch.Tensor) -> Any:
        """The class logits."""
        return model(pixel_values=inputs).logits


_WORKLOADS: dict[str, type[Workload]] = {
    "causal_lm": CausalLMTransformersWorkload, "masked_lm": MaskedLMTransformersWorkload,
    "translation": Seq2SeqWorkload, "classification": ImageClassifierWorkload}


def transformers_workload(info: ModelInfo, input_shape: tuple[int, ...],
                          seq_len: int | None) -> Workload:
    """The workload of the Hugging Face model ``info`` for samples of ``input_shape``."""
    return _WORKLOADS[info.task](info, input_shape, seq_len)


class TransformersDecoder:
    """Greedy decoding with a ``transformers`` causal LM (eval mode): its own key-value
    cache (``cache``, ``past_key_values`` before transformers 5, grown one position
    per token as ``generate`` does), or
    without one the whole sequence so far again for every token. Only the last
    position's logits are computed where the model allows it (``logits_to_keep``)."""

    def __init__(self, model: nn.Module, cached: bool) -> None:
        self.model = model
        self.cached = cached
        positions = getattr(model.config, "max_position_embeddings", None)
        self.max_positions: int | None = int(positions) if positions else None
        accepted = inspect.signature(type(model).forward).parameters
        self.keep: dict[str, Any] = {"logits_to_keep": 1} if "logits_to_keep" in accepted else {}
        # `cache` since transformers 5.x, `past_key_values` before (now deprecated).
        self.cache_name = "cache" if "cache" in accepted else "past_key_values"
        self.past: Any = None
        self.sequence = torch.empty(0)

    def _next(self, output: Any) -> torch.Tensor:
        self.past = getattr(output, self.cache_name) if self.cached else None
        return output.logits[:, -1].argmax(-1)

    def prefill(self, prompts: torch.Tensor) -> torch.Tensor:
        """The prompts from position 0 (filling a fresh cache)."""
        self.sequence = prompts
        return self._next(self.model(input_ids=prompts, use_cache=self.cached, **self.keep))

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """One token more: from the cache, or the whole sequence again."""
        if self.cached:
            return self._next(self.model(input_ids=tokens[:, None], use_cache=True,
                                         **{self.cache_name: self.past}, **self.keep))
        self.sequence = torch.cat([self.sequence, tokens[:, None]], dim=1)
        return self._next(self.model(input_ids=self.sequence, use_cache=False, **self.keep))

"""Greedy generation on PyTorch (``exp.phase=generate``): the backend's hooks, never
timed here.

The worker (``dlbench.worker.generate``) times each hook with a synchronisation after
it: :meth:`PyTorchGenerate.prefill` runs the prompts of some requests through the
model and picks each one's first output token; :meth:`PyTorchGenerate.decode_step`
feeds those tokens back and picks the next ones. A mixin of
:class:`dlbench.backends.pytorch.PyTorchBackend`, whose ``setup`` hands over to
:meth:`PyTorchGenerate.setup_generate` for this phase.

The zoo's models have no cache of their own, so the decoders below run the model's
layers themselves, with the model's weights:

- GPT-2: a cache of every layer's keys and values, allocated once for the longest
  sequence; the prefill fills it for the prompt, each decoding step appends one
  position and attends over the positions so far. Only the last position's logits
  are computed (the prompt's other positions need none).
- the LSTM language model: its recurrent state is its cache;
- a Hugging Face causal LM (``hf:``): the model's own key-value cache
  (``models/pytorch/external/transformers_models.py``).

With ``pytorch.generate_cache=false`` each token instead runs the whole sequence so
far again, as a model without a cache must; both ways give the same tokens.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

import torch
from torch import nn
from torch.nn import functional as F

from dlbench.config.catalog import model_info
from dlbench.errors import WorkerError
from dlbench.models.pytorch.lm import GPT2, WordLanguageModel
from dlbench.models.pytorch.workload_base import Workload
from dlbench.models.pytorch.workloads import make_workload

__all__ = ["GPT2Decoder", "LSTMDecoder", "PyTorchGenerate", "make_decoder"]

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class Decoder(Protocol):
    """Greedy decoding of one model: the next token of every request, ``(B,)``."""

    #: Whether decoding reuses what earlier tokens computed (a KV cache, a state).
    cached: bool
    #: The longest sequence (prompt and output) the decoder can hold, or None.
    max_positions: int | None

    def prefill(self, prompts: torch.Tensor) -> torch.Tensor:
        """Start the requests of ``prompts`` ``(B, P)``; their first output tokens."""

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed the last tokens ``(B,)`` of the requests; their next tokens."""


class GPT2Decoder:
    """GPT-2's forward pass (pre-norm blocks, tied output), eval mode, from a position
    on, with or without a KV cache for ``capacity`` requests of ``length`` positions."""

    def __init__(self, model: GPT2, cached: bool, capacity: int, length: int) -> None:
        if not all(b.pre_norm and b.causal for b in model.blocks):
            raise WorkerError("the GPT-2 decoder needs pre-norm causal blocks")
        self.model = model
        self.cached = cached
        self.capacity = capacity
        self.max_positions: int | None = int(model.wpe.num_embeddings)
        self.positions = min(length, self.max_positions)
        self.caches: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.sequence = torch.empty(0)  # the tokens so far, without a cache
        self.length = 0  # positions so far

    def _kv(self, layer: int, k: torch.Tensor, v: torch.Tensor, start: int
            ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write ``k`` and ``v`` ``(B, heads, T, depth)`` at positions ``start`` on into
        layer ``layer``'s cache; the keys and values of every position so far. The
        cache is allocated by the first prompt (in the dtype attention runs in, which
        autocast decides) for ``capacity`` requests and ``length`` positions."""
        batch, heads, length, depth = k.shape
        if layer == len(self.caches) or self.caches[layer][0].dtype != k.dtype or (
                self.caches[layer][0].shape[0] < batch):
            shape = (max(batch, self.capacity), heads, self.positions, depth)
            cache = (k.new_empty(shape), k.new_empty(shape))
            self.caches[layer:layer + 1] = [cache]
        keys, values = self.caches[layer]
        keys[:batch, :, start:start + length] = k
        values[:batch, :, start:start + length] = v
        return keys[:batch, :, :start + length], values[:batch, :, :start + length]

    def _attention(self, layer: int, x: torch.Tensor, start: int) -> torch.Tensor:
        """Layer ``layer``'s self-attention of ``x`` ``(B, T, dim)`` at positions
        ``start`` on (those before from the cache)."""
        block = self.model.blocks[layer]
        batch, length, dim = x.shape
        q, k, v = (t.view(batch, length, block.heads, dim // block.heads).transpose(1, 2)
                   for t in block.qkv(x).split(dim, dim=2))
        if self.cached:
            k, v = self._kv(layer, k, v, start)
        # A prompt attends causally from position 0; one new token attends to every
        # position so far, which needs no mask. Nothing else is asked.
        if start and length > 1:
            raise ValueError("a chunk of several tokens after the prompt is not supported")
        y = F.scaled_dot_product_attention(q, k, v, is_causal=length > 1)
        return block.attn_out(y.transpose(1, 2).reshape(batch, length, dim))

    def _forward(self, tokens: torch.Tensor, start: int) -> torch.Tensor:
        """Logits of the last position of ``tokens`` ``(B, T)`` placed at ``start``."""
        m = self.model
        positions = torch.arange(start, start + tokens.shape[1], device=tokens.device)
        x = m.wte(tokens) + m.wpe(positions)  # eval: dropout is the identity
        for layer, block in enumerate(m.blocks):
            x = x + self._attention(layer, block.norm1(x), start)
            x = x + block.fc2(F.gelu(block.fc1(block.norm2(x)), approximate=block.gelu))
        return F.linear(m.norm(x[:, -1]), m.wte.weight)

    def prefill(self, prompts: torch.Tensor) -> torch.Tensor:
        """Run the prompts from position 0 (caching their keys and values)."""
        self.length = prompts.shape[1]
        self.sequence = prompts
        return self._forward(prompts, 0).argmax(-1)

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """One position more: from the cache, or the whole sequence again."""
        start = self.length
        self.length += 1
        if self.cached:
            return self._forward(tokens[:, None], start).argmax(-1)
        self.sequence = torch.cat([self.sequence, tokens[:, None]], dim=1)
        return self._forward(self.sequence, 0).argmax(-1)


class LSTMDecoder:
    """The word language model's forward pass (eval mode): the recurrent state carried
    from token to token, or the whole sequence again from a zero state."""

    max_positions: int | None = None

    def __init__(self, model: WordLanguageModel, cached: bool) -> None:
        self.model = model
        self.cached = cached
        self.state: Any = None
        self.sequence = torch.empty(0)

    def _run(self, tokens: torch.Tensor, state: Any) -> torch.Tensor:
        """Next-token ids after ``tokens`` ``(B, T)`` from ``state`` (None: zeros)."""
        out, self.state = self.model.rnn(self.model.encoder(tokens.t()), state)
        return self.model.decoder(out[-1]).argmax(-1)

    def prefill(self, prompts: torch.Tensor) -> torch.Tensor:
        """Run the prompts from a zero state."""
        self.sequence = prompts
        return self._run(prompts, None)

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """One token more, from the state or from the start."""
        if self.cached:
            return self._run(tokens[:, None], self.state)
        self.sequence = torch.cat([self.sequence, tokens[:, None]], dim=1)
        return self._run(self.sequence, None)


def make_decoder(module: nn.Module, model_id: str, cached: bool, capacity: int,
                 length: int) -> Decoder:
    """The decoder of ``module`` (a built zoo model, in eval mode) for at most
    ``capacity`` requests at once of at most ``length`` positions; WorkerError, naming
    the model, for one that has none."""
    if isinstance(module, GPT2):
        return GPT2Decoder(module, cached, capacity, length)
    if isinstance(module, WordLanguageModel):
        return LSTMDecoder(module, cached)
    if type(module).__module__.startswith("transformers."):  # hf: causal LMs, own cache
        from dlbench.models.pytorch.external.transformers_models import TransformersDecoder

        return TransformersDecoder(module, cached)
    raise WorkerError(f"exp.model={model_id}: PyTorch has no generation loop for "
                      f"{type(module).__name__} (backends/pytorch/generate.py: GPT-2, LSTM, "
                      f"Hugging Face causal LMs)")


class PyTorchGenerate:
    """``exp.phase=generate`` for a backend that has set its device and seed."""

    params: Any
    device: torch.device
    workload: Workload
    module: nn.Module
    autocast: Any
    training: bool
    # Read by the backend's environment, finish and teardown.
    batches: Any
    flops: float | None
    losses: list[Any]

    def setup_generate(self) -> None:
        """Build the model and the decoder, and the prompts of ``exp.replica_batch``
        requests (random token ids, the same in every run of the experiment)."""
        p = self.params
        info = model_info(p)
        self.training = False
        self.workload = make_workload(info, int(p["exp.image_size"]), int(p["exp.seq_len"]))
        self.module = self.workload.build().to(self.device).eval()
        self.batches, self.flops, self.losses = None, None, []
        dtype = _DTYPES[str(p["exp.dtype"])]
        self.autocast = ((lambda: torch.autocast(device_type=self.device.type, dtype=dtype))
                         if dtype != torch.float32 else contextlib.nullcontext)
        prompt, output = int(p["exp.prompt_tokens"]), int(p["exp.output_tokens"])
        # The last output token is never fed back: it needs no position.
        self.decoder = make_decoder(self.module, info.id, bool(p["pytorch.generate_cache"]),
                                    int(p["exp.replica_batch"]), prompt + output - 1)
        limit = self.decoder.max_positions
        if limit is not None and prompt + output - 1 > limit:
            raise WorkerError(
                f"exp.prompt_tokens={prompt} and exp.output_tokens={output} need "
                f"{prompt + output - 1} positions, and {info.id} has {limit}; raise "
                f"exp.seq_len to grow its position table")
        vocab = info.vocab_size or info.num_classes
        self.prompts = torch.randint(0, vocab, (int(p["exp.replica_batch"]), prompt),
                                     device=self.device)
        self.next_tokens = torch.empty(0, dtype=torch.long)

    def prefill(self, requests: int) -> None:
        """Start ``requests`` requests (at most ``exp.replica_batch``): their prompts
        through the model, their first tokens chosen. May return before the device
        is done."""
        with torch.inference_mode(), self.autocast():
            self.next_tokens = self.decoder.prefill(self.prompts[:requests])

    def decode_step(self) -> None:
        """The next token of every request started by the last :meth:`prefill`."""
        with torch.inference_mode(), self.autocast():
            self.next_tokens = self.decoder.decode(self.next_tokens)

    def generate_facts(self) -> dict[str, Any]:
        """``results.*`` that say how the tokens were generated."""
        return {"results.generate_cache": self.decoder.cached}

"""What one step of each JAX model is: synthetic data, loss, throughput unit.

The JAX side of ``dlbench.models.pytorch.workloads``, for the models the JAX zoo has:
classifiers (normal images or features, uniform labels, cross-entropy), GPT-2's
next-token prediction and BERT's masked-token prediction, with the same shapes,
label ranges, masking and learning rates as the PyTorch workloads, so the two
frameworks run the same task.

Example::

    workload = make_jax_workload(MODELS["gpt2_small"], image_size=0, seq_len=32)
    inputs, targets = workload.synthetic_batch(np.random.default_rng(0), 4)  # (4, 32)
    workload.throughput_unit()  # ("tokens/s", 32.0)
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn

from dlbench.config.modelinfo import ModelInfo
from dlbench.models.jax import build_jax_model, jax_sample_shape
from dlbench.models.workload import ModelWorkload, task_workload

#: ``(inputs, targets)`` of one batch, first dimension the batch, as host arrays.
Batch = tuple[np.ndarray, np.ndarray]

#: Targets of positions without a loss (BERT's unmasked tokens), as PyTorch's
#: ``ignore_index``.
IGNORE = -100


class JaxWorkload(ModelWorkload):
    """Classification: inputs ``normal(B, *sample_shape)``, labels below
    ``num_classes``, mean cross-entropy. Subclasses override what differs.

    ``sample_shape`` is :class:`~dlbench.models.workload.ModelWorkload`'s
    ``input_shape`` in the layout the Flax model takes (NHWC images).
    """

    def __init__(self, info: ModelInfo, input_shape: tuple[int, ...]) -> None:
        super().__init__(info, input_shape)
        self.sample_shape = jax_sample_shape(input_shape, info.is_image)

    def build(self, dtype: Any) -> nn.Module:
        """A Flax module computing in ``dtype`` (parameters in float32)."""
        return build_jax_model(self.info.id, self.input_shape, self.info.num_classes, dtype)

    def example_inputs(self, batch_size: int) -> Any:
        """Zeros of the inputs' shape and dtype (for initialising the model)."""
        return jnp.zeros((batch_size, *self.sample_shape), jnp.float32)

    def synthetic_batch(self, rng: np.random.Generator, batch_size: int) -> Batch:
        """Random inputs and labels of ``batch_size`` samples, as host arrays (the
        backend copies them to the devices once)."""
        inputs = rng.standard_normal((batch_size, *self.sample_shape), dtype=np.float32)
        labels = rng.integers(0, self.info.num_classes, (batch_size,), dtype=np.int32)
        return inputs, labels

    def loss(self, logits: Any, targets: Any) -> Any:
        """Mean cross-entropy, in float32 whatever the compute dtype."""
        return optax.softmax_cross_entropy_with_integer_labels(
            logits.astype(jnp.float32), targets
        ).mean()

    def throughput_unit(self) -> tuple[str, float]:
        """The unit of ``results.throughput`` and how many of it one sample holds."""
        return self.info.unit, 1.0


class JaxCausalLMWorkload(JaxWorkload):
    """Next-token prediction at every position (GPT-2); throughput in tokens."""

    def _vocab(self) -> int:
        return self.info.vocab_size or self.info.num_classes

    def example_inputs(self, batch_size: int) -> Any:
        """Zero token ids ``(B, T)``."""
        return jnp.zeros((batch_size, *self.sample_shape), jnp.int32)

    def synthetic_batch(self, rng: np.random.Generator, batch_size: int) -> Batch:
        """Random token ids and the same stream shifted by one, ``(B, T)`` each."""
        length = self.sample_shape[0]
        stream = rng.integers(0, self._vocab(), (batch_size, length + 1), dtype=np.int32)
        return np.ascontiguousarray(stream[:, :-1]), np.ascontiguousarray(stream[:, 1:])

    def loss(self, logits: Any, targets: Any) -> Any:
        """Mean cross-entropy over the positions that have a target."""
        valid = targets != IGNORE
        losses = optax.softmax_cross_entropy_with_integer_labels(
            logits.astype(jnp.float32), jnp.where(valid, targets, 0)
        )
        return jnp.sum(losses * valid) / jnp.maximum(jnp.sum(valid), 1)

    def throughput_unit(self) -> tuple[str, float]:
        """Tokens: one sample is a sequence of ``T`` of them."""
        return "tokens/s", float(self.sample_shape[0])


class JaxMaskedLMWorkload(JaxCausalLMWorkload):
    """BERT's masked-LM objective: a fixed 15 % of the positions of each sequence (at
    least one) replaced by ``[MASK]`` and predicted; -100 elsewhere."""

    MASK_ID = 103  # [MASK] in BERT's uncased WordPiece vocabulary
    MASK_FRACTION = 0.15

    def synthetic_batch(self, rng: np.random.Generator, batch_size: int) -> Batch:
        """Masked random tokens and the original ids at the masked positions."""
        length = self.sample_shape[0]
        tokens = rng.integers(0, self._vocab(), (batch_size, length), dtype=np.int32)
        # A fixed count per sequence, not a Bernoulli draw: a draw can mask nothing in
        # a short sequence, and a loss over no targets is NaN.
        count = max(1, round(self.MASK_FRACTION * length))
        chosen = np.argsort(rng.random((batch_size, length)), axis=1)[:, :count]
        masked = np.zeros((batch_size, length), dtype=bool)
        np.put_along_axis(masked, chosen, True, axis=1)
        return (np.where(masked, self.MASK_ID, tokens).astype(np.int32),
                np.where(masked, tokens, IGNORE).astype(np.int32))


#: Task (``ModelInfo.task``) → its workload, for the tasks of the JAX zoo's models.
_WORKLOADS: dict[str, type[JaxWorkload]] = {
    "classification": JaxWorkload,
    "causal_lm": JaxCausalLMWorkload,
    "masked_lm": JaxMaskedLMWorkload,
}


def make_jax_workload(info: ModelInfo, image_size: int = 0, seq_len: int = 0) -> JaxWorkload:
    """The workload of ``info``'s task at an experiment's sizes (``exp.image_size``,
    ``exp.seq_len``; 0 for the published ones)."""
    workload_class = task_workload(_WORKLOADS, "JAX", info)
    return workload_class(info, info.sample_shape(image_size, seq_len))

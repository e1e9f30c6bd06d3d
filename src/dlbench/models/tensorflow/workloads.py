"""What one step of each TensorFlow model is: its synthetic batch, its loss and its
throughput unit, as ``dlbench.models.pytorch.workloads`` has them for PyTorch.

The same shapes and label ranges as the PyTorch workloads (images in NHWC): random
normal inputs and ``[0, num_classes)`` labels with cross-entropy for classifiers;
random tokens and the same stream shifted by one for GPT-2 (next-token
cross-entropy at every position); BERT's masked-LM objective with 15 % of the
positions (at least one) replaced by ``[MASK]`` and predicted.

A loss is the mean over this replica's batch; the backend divides it by the number
of replicas, so that the gradients summed across replicas are those of the mean
over the global batch.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from dlbench.config.modelinfo import ModelInfo
from dlbench.models.tensorflow import build_tensorflow_model
from dlbench.models.tensorflow.layers import nhwc
from dlbench.models.workload import ModelWorkload, task_workload

#: ``(inputs, targets)``: one batch, first dimension the batch, on the device.
Batch = tuple[tf.Tensor, tf.Tensor]


class KerasWorkload(ModelWorkload):
    """Classification: inputs ``normal(B, *shape)``, labels ``uniform[0, classes)``,
    softmax cross-entropy. Subclasses override what differs."""

    def build(self) -> keras.Model:
        """A freshly initialised, built model (under the caller's strategy scope)."""
        return build_tensorflow_model(self.info.id, self.input_shape, self.info.num_classes)

    def synthetic_batch(self, batch_size: int) -> Batch:
        """Random inputs and labels of ``batch_size`` samples, on the current device."""
        inputs = tf.random.normal((batch_size, *nhwc(self.input_shape)))
        labels = tf.random.uniform((batch_size,), 0, self.info.num_classes, tf.int32)
        return inputs, labels

    def loss(self, outputs: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
        """The mean loss of a batch, float32, from the model's outputs."""
        per_sample = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=targets, logits=tf.cast(outputs, tf.float32)
        )
        return tf.reduce_mean(per_sample)

    def throughput_unit(self) -> tuple[str, float]:
        """The unit of ``results.throughput`` and how many of it one sample holds."""
        return self.info.unit, 1.0


class KerasCausalLMWorkload(KerasWorkload):
    """Next-token prediction over every position (GPT-2): the classifier's loss over
    ``(B, T, vocab)`` logits; throughput in tokens."""

    def _vocab(self) -> int:
        return self.info.vocab_size or self.info.num_classes

    def synthetic_batch(self, batch_size: int) -> Batch:
        """Random token ids ``(B, T)`` and their next-token targets (the same stream
        shifted by one), as a real text loader gives them."""
        length = self.input_shape[0]
        stream = tf.random.uniform((batch_size, length + 1), 0, self._vocab(), tf.int32)
        return stream[:, :-1], stream[:, 1:]

    def throughput_unit(self) -> tuple[str, float]:
        """Tokens: one sample is a sequence of ``T`` of them."""
        return "tokens/s", float(self.input_shape[0])


class KerasMaskedLMWorkload(KerasCausalLMWorkload):
    """BERT's masked-LM objective: a fixed 15 % of the positions (at least one) are
    ``[MASK]`` and predicted; the other positions have the target -1 (PyTorch's
    -100) and no loss."""

    MASK_ID = 103  # [MASK] in BERT's uncased WordPiece vocabulary
    MASK_FRACTION = 0.15

    def synthetic_batch(self, batch_size: int) -> Batch:
        """Masked random tokens and the original ids at the masked positions."""
        length = self.input_shape[0]
        tokens = tf.random.uniform((batch_size, length), 0, self._vocab(), tf.int32)
        count = max(1, round(self.MASK_FRACTION * length))
        chosen = tf.math.top_k(tf.random.uniform((batch_size, length)), count).indices
        masked = tf.reduce_any(tf.one_hot(chosen, length, on_value=True, off_value=False), 1)
        inputs = tf.where(masked, self.MASK_ID, tokens)
        return inputs, tf.where(masked, tokens, -1)

    def loss(self, outputs: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
        """Mean cross-entropy over the masked positions only."""
        counted = targets >= 0
        per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.maximum(targets, 0), logits=tf.cast(outputs, tf.float32)
        )
        weights = tf.cast(counted, tf.float32)
        return tf.reduce_sum(per_token * weights) / tf.reduce_sum(weights)


#: Task (``ModelInfo.task``) → its workload, for the tasks of the TensorFlow zoo's models.
WORKLOADS: dict[str, type[KerasWorkload]] = {
    "classification": KerasWorkload,
    "masked_lm": KerasMaskedLMWorkload,
    "causal_lm": KerasCausalLMWorkload,
}


def make_workload(info: ModelInfo, image_size: int = 0, seq_len: int = 0) -> KerasWorkload:
    """The workload of ``info``'s task at an experiment's sizes (``exp.image_size``,
    ``exp.seq_len``; 0 for the published ones)."""
    workload_class = task_workload(WORKLOADS, "TensorFlow", info)
    return workload_class(info, info.sample_shape(image_size, seq_len),
                          info.sequence_length(seq_len))

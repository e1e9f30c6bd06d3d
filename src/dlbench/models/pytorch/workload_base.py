"""The workload abstraction: what one step of a model's training or inference is.

The backend knows one loop: take a batch, run the phase, keep the loss. Everything
that differs between a classifier, a language model, a GAN or a reinforcement
learning agent lives in a :class:`Workload`: how to build the module, how to make a
synthetic batch on the device, what the training loss is (one or several, each with
its own optimizer), what inference runs, and in which unit throughput is counted.

A batch is always a pair of tensors ``(inputs, targets)`` whose first dimension is
the batch: the pair is what the real-data loader yields, what the FLOP counter runs
on and what the backend moves around without looking inside. A workload that needs
more than one input packs them into one tensor (the translator stacks source and
target tokens).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import torch
from torch import nn

from dlbench.models.build_pytorch import build_pytorch_model
from dlbench.models.workload import ModelWorkload

#: ``(inputs, targets)``: one batch, first dimension the batch, on the device.
Batch = tuple[torch.Tensor, torch.Tensor]


class Workload(ModelWorkload):
    """Image (or feature) classification: inputs ``randn(B, *input_shape)``, labels
    ``randint(num_classes)``, cross-entropy. Subclasses override what differs; what
    it is made for is :class:`~dlbench.models.workload.ModelWorkload`'s.
    """

    #: False for a workload that times its input pipeline alone (``loader``).
    runs_model: ClassVar[bool] = True

    def build(self) -> nn.Module:
        """A freshly initialised module on the default device (a ``torch.device``
        context puts it elsewhere, ``meta`` included)."""
        return build_pytorch_model(self.info.id, self.input_shape, self.info.num_classes)

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Random inputs and targets of ``batch_size`` samples, made on ``device``."""
        inputs = torch.randn(batch_size, *self.input_shape, device=device)
        labels = torch.randint(0, self.info.num_classes, (batch_size,), device=device)
        return inputs, labels

    def real_batch(self, inputs: torch.Tensor, targets: torch.Tensor) -> Batch:
        """Turn a batch of the real-data loader (``dlbench.backends.data``) into this
        workload's batch; the identity for the models whose task it already is."""
        return inputs, targets

    def infer(self, model: Any, inputs: torch.Tensor) -> Any:
        """The inference phase: a forward pass (the caller holds inference mode)."""
        return model(inputs)

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The training loss of one batch (forward included), a 0-d tensor."""
        logits = model(inputs)
        return nn.functional.cross_entropy(logits.float(), targets)

    def training_losses(
        self, model: Any, inputs: torch.Tensor, targets: torch.Tensor
    ) -> Iterator[torch.Tensor]:
        """The losses of one training step, one per :meth:`parameter_groups` entry.

        The caller runs the backward pass and the optimizer step of each loss before
        asking for the next one, so a later loss sees the parameters an earlier one
        updated (a GAN's generator loss sees the discriminator after its step).
        """
        yield self.loss(model, inputs, targets)

    def parameter_groups(self, module: nn.Module) -> list[list[nn.Parameter]]:
        """The parameters of each optimizer, in the order of :meth:`training_losses`."""
        return [list(module.parameters())]

    def compile(self, module: nn.Module, mode: str) -> Any:
        """What ``pytorch.compile`` runs: the module under ``torch.compile``. A workload
        that calls submodules rather than the module compiles those instead."""
        return torch.compile(module, mode=mode)

    def throughput_unit(self, training: bool) -> tuple[str, float]:
        """The unit of ``results.throughput`` and how many of it one sample holds."""
        return self.info.unit, 1.0


class ClassificationWorkload(Workload):
    """The default, named for what it does: every classifier of the zoo uses it."""


class LoaderWorkload(Workload):
    """``loader``: the input pipeline alone. No model: a step is waiting for the next
    real batch, in either phase."""

    runs_model = False

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Never called: the backend does not run a model for this workload."""
        raise NotImplementedError("loader has no model and no loss")


def no_model(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """``loader``'s builder: an empty module, so that set-up and parameter counts stay
    uniform for a workload that runs no model."""
    return nn.Module()


def token_batch(batch_size: int, seq_len: int, vocab_size: int, device: torch.device) -> Batch:
    """Random tokens ``(B, T)`` and their next-token targets ``(B, T)`` (the same
    stream shifted by one), as a real text loader gives them."""
    stream = torch.randint(0, vocab_size, (batch_size, seq_len + 1), device=device)
    return stream[:, :-1].contiguous(), stream[:, 1:].contiguous()

"""The PyTorch backend's answers beyond timing: the memory breakdown, the profiling
window, and training to a target accuracy. A mixin of
:class:`dlbench.backends.pytorch.PyTorchBackend`, kept apart so that the timed path
stays short; every method runs outside the timed batches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from dlbench.backends.pytorch.memory import (
    device_peak,
    gradients_bytes,
    optimizer_bytes,
    saved_activation_bytes,
    weights_bytes,
)
from dlbench.backends.pytorch.profile import Window
from dlbench.errors import WorkerError
from dlbench.models.pytorch.workload_base import Batch, Workload

__all__ = ["PyTorchExtras"]


class PyTorchExtras:
    """Memory, profiling and accuracy for a backend that has the attributes below."""

    params: Any
    device: torch.device
    module: nn.Module
    workload: Workload
    training: bool
    optimizers: list[torch.optim.Optimizer]
    autocast: Any
    batches: Iterator[Batch] | None
    window: Window | None = None

    def _next_batch(self) -> Batch:
        raise NotImplementedError

    def memory_breakdown(self) -> dict[str, Any]:
        """One untimed step of the eager module, counting what autograd saves."""
        if not self.workload.runs_model:
            return {"results.memory.note": "the loader runs no model"}
        parameters = list(self.module.parameters())
        results: dict[str, Any] = {"results.memory.weights_bytes": weights_bytes(parameters)}
        inputs, targets = self._next_batch()
        activations = 0
        if self.training:
            losses = self.workload.training_losses(self.module, inputs, targets)
            for optimizer in self.optimizers:
                optimizer.zero_grad(set_to_none=True)

                def forward() -> torch.Tensor:
                    with self.autocast():
                        return next(losses)

                # Each loss's activations are freed by its backward pass before the
                # next loss runs: the most held at once is the largest one's.
                saved, loss = saved_activation_bytes(forward, parameters)
                activations = max(activations, saved)
                loss.backward()
            results["results.memory.gradients_bytes"] = gradients_bytes(parameters)
            results["results.memory.optimizer_bytes"] = optimizer_bytes(self.optimizers)
        else:
            with torch.inference_mode(), self.autocast():
                self.workload.infer(self.module, inputs)  # inference saves nothing
            results["results.memory.gradients_bytes"] = 0
            results["results.memory.optimizer_bytes"] = 0
        results["results.memory.activations_bytes"] = activations
        results.update(device_peak(self.device))
        return results

    def start_profile(self, tool: str, trace_path: str) -> None:
        """Open the window of ``exp.profile=tool`` (see :mod:`pytorch_profile`)."""
        self.window = Window(tool, self.device, trace_path, int(self.params["exp.profile_top"]))
        self.window.start()

    def stop_profile(self, wall_ms: float) -> dict[str, Any]:
        """Close the window and summarise it."""
        if self.window is None:
            raise WorkerError("the profiling window was never opened")
        results = self.window.stop(wall_ms)
        self.window = None
        return results

    # -- exp.phase=train_to_accuracy --------------------------------------------------

    def _accuracy_loaders(self) -> tuple[Any, Any, str]:
        """The training and validation loaders, made once."""
        cached = getattr(self, "_accuracy", None)
        if cached is None:
            from dlbench.backends.pytorch.accuracy_data import load_split  # only this phase

            info = self.workload.info
            split = load_split(self.params, info, self.workload.input_shape)
            train, val = split.loaders(int(self.params["exp.replica_batch"]),
                                       int(self.params["pytorch.seed"]))
            cached = (train, val, split.description)
            self._accuracy = cached
        return cached

    def start_epoch(self) -> int:
        """A new shuffled pass over the training set; its number of batches."""
        train, _, _ = self._accuracy_loaders()
        device = self.device
        self.batches = ((x.to(device), y.to(device)) for x, y in train)
        return len(train)

    def evaluate(self) -> float:
        """Accuracy of the eager module on the validation set, in eval mode."""
        _, val, _ = self._accuracy_loaders()
        correct = total = 0
        self.module.eval()
        try:
            with torch.inference_mode(), self.autocast():
                for inputs, labels in val:
                    logits = self.workload.infer(self.module, inputs.to(self.device))
                    correct += int((logits.argmax(dim=1) == labels.to(self.device)).sum())
                    total += len(labels)
        finally:
            self.module.train(self.training)
        return correct / total

    def accuracy_data(self) -> str:
        """How the data of exp.phase=train_to_accuracy was made."""
        return self._accuracy_loaders()[2]

"""``exp.phase=train_to_accuracy``: train until the held-out accuracy reaches
``exp.target_accuracy``, or ``exp.max_epochs``, or ``exp.max_train_seconds``.

The worker owns the loop, as for timed batches: each epoch is one pass of
:meth:`~dlbench.backends.base.Backend.step` over the training batches the backend's
:meth:`~dlbench.backends.base.Backend.start_epoch` announces, timed from the first step
to the device's synchronisation; evaluation on the held-out data follows, outside the
timed interval. Time to target is the training time of the epochs it took.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from dlbench.backends.base import Backend, run_steps

__all__ = ["train_to_accuracy"]


def train_to_accuracy(params: Mapping[str, Any], backend: Backend) -> tuple[dict[str, Any], int]:
    """Train ``backend`` epoch by epoch; the ``results.*`` of the run and how many
    steps it ran."""
    target = float(params["exp.target_accuracy"])
    max_epochs = int(params["exp.max_epochs"])
    max_seconds = float(params["exp.max_train_seconds"])
    curve: list[float] = []
    epoch_seconds: list[float] = []
    index = 0
    reached_at: int | None = None
    while len(curve) < max_epochs:
        batches = backend.start_epoch()
        began = time.perf_counter()
        index = run_steps(backend, index, batches)
        epoch_seconds.append(time.perf_counter() - began)
        curve.append(backend.evaluate())
        if curve[-1] >= target:
            reached_at = len(curve)
            break
        if sum(epoch_seconds) >= max_seconds:
            break
    trained = sum(epoch_seconds)
    results: dict[str, Any] = {
        "results.accuracy_curve": curve,
        "results.epoch_seconds": epoch_seconds,
        "results.accuracy_reached": reached_at is not None,
        "results.epochs_to_target": reached_at,
        "results.time_to_target": trained if reached_at is not None else None,
        "results.accuracy_final": curve[-1],
        "results.num_batches": index,
        "results.timed_seconds": trained,
        # The mean of every training batch, the last one of each epoch maybe smaller.
        "results.time": trained * 1000.0 / index if index else None,
    }
    return results, index

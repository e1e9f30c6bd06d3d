"""What every framework's workloads share, framework-free: the model and one sample's
shape they are made for, the learning rates they train with, and which workload a
model's task gets.

Each framework's workloads (:mod:`dlbench.models.pytorch.workloads`,
:mod:`dlbench.models.jax.workloads`, :mod:`dlbench.models.tensorflow.workloads`)
derive from :class:`ModelWorkload` and add the batches, the loss and the build in
their framework; their tables of task to workload are read through
:func:`task_workload`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, TypeVar

from dlbench.config.modelinfo import ModelInfo

__all__ = ["LEARNING_RATES", "ModelWorkload", "task_workload"]

_Workload = TypeVar("_Workload")

#: The learning rate of each optimizer (``pytorch.optimizer``, ``jax.optimizer``,
#: ``tensorflow.optimizer``) in every framework's workloads, so that one model trains
#: alike in each; a workload whose loss is summed over many outputs lowers its own.
LEARNING_RATES: dict[str, float] = {"sgd": 0.01, "adam": 1e-3}


class ModelWorkload:
    """A model's workload at an experiment's sizes: ``info``, the model; ``input_shape``,
    one sample's shape in the catalog's layout (``C, H, W`` for images) with the image
    side and sequence length applied (:meth:`ModelInfo.sample_shape`), as the builders
    take it; ``seq_len``, the sequence length for the models that have one
    (:meth:`ModelInfo.sequence_length`), else None."""

    #: Learning rates per optimizer (:data:`LEARNING_RATES`).
    learning_rates: ClassVar[dict[str, float]] = LEARNING_RATES

    def __init__(self, info: ModelInfo, input_shape: tuple[int, ...],
                 seq_len: int | None = None) -> None:
        self.info = info
        self.input_shape = input_shape
        self.seq_len = seq_len


def task_workload(workloads: Mapping[str, _Workload], framework: str, info: ModelInfo) -> _Workload:
    """``workloads[info.task]``: the workload (class) of ``info``'s task in
    ``framework``'s table. Raises :class:`KeyError` naming the framework, the task and
    the model when the table has none (a bug: the planner refuses the models a
    framework does not define).

    >>> from dlbench.config.catalog import MODELS
    >>> task_workload({"classification": "image"}, "X", MODELS["resnet50"])
    'image'
    """
    try:
        return workloads[info.task]
    except KeyError:
        raise KeyError(f"no {framework} workload for task {info.task!r} of {info.id}") from None

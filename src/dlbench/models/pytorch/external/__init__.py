"""The PyTorch workloads of models from libraries (``hf:``, ``timm:``, ``torchvision:``;
see :mod:`dlbench.config.external`): each library is imported when the model is built,
in the worker, never before.
"""

from __future__ import annotations

from dlbench.config.modelinfo import ModelInfo
from dlbench.models.pytorch.external.transformers_models import transformers_workload
from dlbench.models.pytorch.external.vision_libraries import LibraryClassifierWorkload
from dlbench.models.pytorch.workload_base import Workload

__all__ = ["external_workload"]


def external_workload(info: ModelInfo, image_size: int = 0, seq_len: int = 0) -> Workload:
    """The workload of the library model ``info`` at an experiment's sizes."""
    sequence = info.sequence_length(seq_len)
    shape = info.sample_shape(image_size, seq_len)
    if info.source == "hf":
        return transformers_workload(info, shape, sequence)
    return LibraryClassifierWorkload(info, shape, sequence)

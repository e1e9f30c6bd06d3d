"""FLOPs per sample of a model's architecture: one number whatever framework runs it.

The zoo's rule is that a model id is the same architecture in every framework, so the
work one sample costs is a fact of the model, the phase and the input shape, not of the
framework: counted once here, from the model's PyTorch definition on the ``meta``
device, where operators compute shapes and nothing else (no memory, no device, a
fraction of a second). The convention is PyTorch's counter with dlbench's corrections
(:mod:`dlbench.models.pytorch.flops`), which TensorFlow's graph counter
(:mod:`dlbench.models.tensorflow.flops`) reproduces: matrix products and convolutions,
two operations per multiply-add, forward for inference, forward and backward for
training. A framework's own counter (XLA's cost analysis counts elementwise work and
skips padding; it also varies with the batch) is kept as a cross-check only.

Example::

    from dlbench.config.catalog import MODELS
    from dlbench.models.flops import architecture_flops

    architecture_flops(MODELS["toy"], training=False)  # 18944.0: 2*64*128 + 2*128*10
"""

from __future__ import annotations

from dlbench.config.modelinfo import ModelInfo
from dlbench.errors import WorkerError

__all__ = ["ARCHITECTURE_SOURCE", "COUNT_BATCH", "FlopsNotCounted", "architecture_flops"]

#: ``results.flops_source`` of a count made here.
ARCHITECTURE_SOURCE = "architecture"

#: Samples in the batch counted: two, not one, since batch normalisation refuses a
#: batch of one in training once the feature map is 1x1 (ResNet at 32 px). Every
#: counted operator is linear in the batch, so the count per sample is the batch's
#: total divided by this, whatever batch the experiment runs.
COUNT_BATCH = 2


class FlopsNotCounted(WorkerError):
    """The architecture's FLOPs cannot be counted: no PyTorch definition, a model that
    runs none, or an operator the ``meta`` device or the counter does not know."""


def architecture_flops(
    info: ModelInfo, training: bool, image_size: int = 0, seq_len: int = 0
) -> float:
    """FLOPs of one sample of ``info``'s model at an experiment's sizes
    (``exp.image_size``, ``exp.seq_len``; 0 for the published ones): forward for
    inference, forward and backward when ``training``.

    Raises :class:`FlopsNotCounted` (with the reason) when the model has no PyTorch
    builder, runs no model, or its step does not run on the ``meta`` device.
    """
    # Imported here: importing this module must not import torch (the worker imports
    # it whatever its framework, and only pays for torch when it counts).
    import torch

    from dlbench.models.pytorch.flops import count_step_flops
    from dlbench.models.pytorch.workloads import make_workload

    meta = torch.device("meta")
    try:
        workload = make_workload(info, image_size, seq_len)
        if not workload.runs_model:
            raise FlopsNotCounted(f"model {info.id} runs no model")
        with meta:
            module = workload.build()
            module.train(training)
            inputs, targets = workload.synthetic_batch(COUNT_BATCH, meta)
            total = count_step_flops(workload, module, inputs, targets, training)
    except KeyError as error:  # no PyTorch workload or builder (the message names them)
        raise FlopsNotCounted(f"model {info.id}: {error.args[0]}") from None
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as error:
        first = (str(error).strip().splitlines() or [""])[0]
        raise FlopsNotCounted(
            f"model {info.id} does not run on PyTorch's meta device: "
            f"{type(error).__name__}: {first}") from None
    if total <= 0:
        raise FlopsNotCounted(f"model {info.id}: no matrix product or convolution counted")
    return total / COUNT_BATCH

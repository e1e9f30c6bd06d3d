"""Which workload each model runs, and the sample shape at an experiment's sizes.

Example::

    from dlbench.config.catalog import MODELS
    from dlbench.models.pytorch.workloads import make_workload

    workload = make_workload(MODELS["gpt2_small"], image_size=0, seq_len=128)
    module = workload.build()
    inputs, targets = workload.synthetic_batch(4, torch.device("cpu"))
    loss = workload.loss(module, inputs, targets)
    workload.throughput_unit(training=True)  # ("tokens/s", 128.0)

The workload is the model's task's (``ModelInfo.task``): a new image model (a
``classification`` one) needs nothing but its builder.
"""

from __future__ import annotations

from dlbench.config.modelinfo import ModelInfo
from dlbench.models.pytorch.cartpole import CartPoleWorkload
from dlbench.models.pytorch.detection import DetectionWorkload
from dlbench.models.pytorch.generative import GANWorkload, VAEWorkload
from dlbench.models.pytorch.imaging import StyleTransferWorkload, SuperResolutionWorkload
from dlbench.models.pytorch.lm import CausalLMWorkload, MaskedLMWorkload
from dlbench.models.pytorch.recsys_toys import (
    RecommendationWorkload,
    RegressionWorkload,
    SineWorkload,
)
from dlbench.models.pytorch.translation import TranslationWorkload
from dlbench.models.pytorch.workload_base import ClassificationWorkload, LoaderWorkload, Workload
from dlbench.models.workload import task_workload

#: Task (``ModelInfo.task``) → its workload: every task of
#: :data:`dlbench.config.modelinfo.TASKS`.
WORKLOADS: dict[str, type[Workload]] = {
    "classification": ClassificationWorkload,
    "masked_lm": MaskedLMWorkload,
    "causal_lm": CausalLMWorkload,
    "translation": TranslationWorkload,
    "gan": GANWorkload,
    "vae": VAEWorkload,
    "recommendation": RecommendationWorkload,
    "super_resolution": SuperResolutionWorkload,
    "style_transfer": StyleTransferWorkload,
    "detection": DetectionWorkload,
    "regression": RegressionWorkload,
    "time_series": SineWorkload,
    "reinforcement_learning": CartPoleWorkload,
    "input_pipeline": LoaderWorkload,
}


def sample_shape(info: ModelInfo, image_size: int, seq_len: int) -> tuple[int, ...]:
    """One sample's shape with ``exp.image_size`` and ``exp.seq_len`` applied (0 keeps
    the published size): :meth:`ModelInfo.sample_shape`, the rule of every framework."""
    return info.sample_shape(image_size, seq_len)


def make_workload(info: ModelInfo, image_size: int = 0, seq_len: int = 0) -> Workload:
    """The workload of ``info``'s task at an experiment's sizes (``exp.image_size``,
    ``exp.seq_len``; 0 for the published ones); a model from a library (``hf:``,
    ``timm:``, ``torchvision:``) gets the workload that builds it with its library."""
    if info.source:
        # Imported here: the library workloads are needed only for such a model.
        from dlbench.models.pytorch.external import external_workload

        return external_workload(info, image_size, seq_len)
    workload_class = task_workload(WORKLOADS, "PyTorch", info)
    return workload_class(info, info.sample_shape(image_size, seq_len),
                          info.sequence_length(seq_len))

"""Which workload each model runs, and the sample shape at an experiment's sizes.

Example::

    from dlbench.config.catalog import MODELS
    from dlbench.models.pytorch.workloads import make_workload

    workload = make_workload(MODELS["gpt2_small"], image_size=0, seq_len=128)
    module = workload.build()
    inputs, targets = workload.synthetic_batch(4, torch.device("cpu"))
    loss = workload.loss(module, inputs, targets)
    workload.throughput_unit(training=True)  # ("tokens/s", 128.0)

A model without an entry here is a classifier (:class:`ClassificationWorkload`), so
new image models need nothing but their builder.
"""

from __future__ import annotations

from dlbench.config.catalog import model_input_shape
from dlbench.config.modelinfo import ModelInfo
from dlbench.models.pytorch.cartpole import CartPoleWorkload
from dlbench.models.pytorch.detection import DetectionWorkload
from dlbench.models.pytorch.generative import GANWorkload, VAEWorkload
from dlbench.models.pytorch.imaging import StyleTransferWorkload, SuperResolutionWorkload
from dlbench.models.pytorch.lm import CausalLMWorkload, MaskedLMWorkload
from dlbench.models.pytorch.small_tasks import (
    RecommendationWorkload,
    RegressionWorkload,
    SineWorkload,
)
from dlbench.models.pytorch.translation import TranslationWorkload
from dlbench.models.pytorch.workload import ClassificationWorkload, LoaderWorkload, Workload

#: Model id → its workload, for every model that is not a classifier.
WORKLOADS: dict[str, type[Workload]] = {
    "bert_base": MaskedLMWorkload,
    "gpt2_small": CausalLMWorkload,
    "wlm": CausalLMWorkload,
    "translator": TranslationWorkload,
    "dcgan": GANWorkload,
    "vae": VAEWorkload,
    "ncf": RecommendationWorkload,
    "espcn": SuperResolutionWorkload,
    "fast_style": StyleTransferWorkload,
    "ssd_lite": DetectionWorkload,
    "toy_reg": RegressionWorkload,
    "toy_lstm": SineWorkload,
    "cart": CartPoleWorkload,
    "loader": LoaderWorkload,
}


def sample_shape(info: ModelInfo, image_size: int, seq_len: int) -> tuple[int, ...]:
    """One sample's shape with ``exp.image_size`` and ``exp.seq_len`` applied (0 keeps
    the published size). A model whose input is its sequence declares
    ``input_shape == (seq_len,)``; others (cart's observations) keep their shape."""
    if info.seq_len is not None and seq_len > 0 and info.input_shape == (info.seq_len,):
        return (seq_len,)
    return model_input_shape(info, image_size)


def make_workload(info: ModelInfo, image_size: int = 0, seq_len: int = 0) -> Workload:
    """The workload of ``info`` at an experiment's sizes (``exp.image_size``,
    ``exp.seq_len``; 0 for the published ones)."""
    workload_class = WORKLOADS.get(info.id, ClassificationWorkload)
    sequence = (seq_len or info.seq_len) if info.seq_len is not None else None
    return workload_class(info, sample_shape(info, image_size, seq_len), sequence)

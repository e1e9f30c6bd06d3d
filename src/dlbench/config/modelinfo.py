"""The metadata of a model, as plain data (see ``dlbench.config.catalog``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: File name endings read as images from exp.data_dir.
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp"})


#: What one step of a model may do; a framework runs each task with a workload of its
#: own (``dlbench.models.pytorch.workloads`` has every one).
TASKS = (
    "classification", "masked_lm", "causal_lm", "translation", "gan", "vae",
    "recommendation", "super_resolution", "style_transfer", "detection", "regression",
    "time_series", "reinforcement_learning", "input_pipeline",
)


def built_by(**paths: str) -> dict[str, str]:
    """A model's builders, ``{framework id: "module:function"}``, from paths relative to
    each framework's package of builders, ``dlbench.models.<framework id>``.

    >>> built_by(pytorch="resnet:resnet18")
    {'pytorch': 'dlbench.models.pytorch.resnet:resnet18'}
    """
    for framework, path in paths.items():
        if ":" not in path:
            raise ValueError(f"builder {framework}={path!r} is not module:function")
    return {framework: f"dlbench.models.{framework}.{path}" for framework, path in paths.items()}


#: The unit of a throughput whose model says no better one: samples per second.
GENERIC_UNIT = "samples/s"


@dataclass(frozen=True)
class ModelInfo:
    """A model's metadata; the same id means the same architecture in every framework."""

    id: str
    title: str
    domain: str
    input_shape: tuple[int, ...]  # one sample, channels first for images: (C, H, W)
    num_classes: int
    default_batch: int
    unit: str = GENERIC_UNIT
    is_image: bool = True  # exp.image_size rescales the last two input dimensions
    reference_params: int | None = None  # published parameter count, checked by the tests
    # Smallest image side the architecture computes (below it a pooling window is
    # larger than its input); None when any size works (resnets reach 1x1 and stay).
    min_image_size: int | None = None
    description: str = ""
    # What exp.data_dir may hold for this model: "images" (class sub-folders of
    # images), "text" (a text file), or "" for synthetic data only. Image
    # classification models read images without saying so (see real_data_kind).
    real_data: str = ""
    # What one step does with the model, one of TASKS: each framework runs the workload
    # of the task (dlbench.models.<framework>.workloads), "classification"
    # (cross-entropy on labels) unless the model says otherwise. Which frameworks
    # define the model: those its builders name, with fake (every model) and ONNX
    # Runtime (its own list) (dlbench.config.catalog.model_frameworks).
    task: str = "classification"
    # Published sequence length (tokens, time steps, environment steps of a rollout) of
    # the models exp.seq_len resizes; a model whose input is that sequence declares
    # input_shape == (seq_len,). None: exp.seq_len does not apply.
    seq_len: int | None = None
    # Token ids of language models are below this (real text is hashed into it).
    vocab_size: int | None = None
    # Its builders: framework id -> `module:function` building the model, imported only
    # in the worker (dlbench.models.builders.load_builders); built_by() writes them in one line.
    # A framework's builder table is every model whose builders name it
    # (dlbench.config.zoo.zoo_builders). Left out of the hash: a dict has none.
    builders: Mapping[str, str] = field(default_factory=dict, hash=False)
    # Where a model from outside the zoo comes from (``hf``, ``timm``, ``torchvision``:
    # dlbench.config.external), "" for the zoo's; the PyTorch backend builds such a
    # model with its library instead of a builder of the zoo.
    source: str = ""
    # A Hugging Face model's resolved configuration (config.json's keys, the hf.*
    # sizes applied), from which the worker builds it and the FLOPs are counted.
    source_config: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"model {self.id}: unknown task {self.task!r}; known: "
                             f"{', '.join(TASKS)}")

    def sample_shape(self, image_size: int = 0, seq_len: int = 0) -> tuple[int, ...]:
        """One sample's shape at an experiment's sizes (``exp.image_size``,
        ``exp.seq_len``; 0 keeps the published size), in every framework: the image side
        replaced for image models; the length replaced for a model whose input is its
        sequence (``input_shape == (seq_len,)``; others, such as cart's observations,
        keep their shape).

        >>> ModelInfo("m", "M", "d", (3, 224, 224), 10, 8).sample_shape(64)
        (3, 64, 64)
        """
        if self.seq_len is not None and seq_len > 0 and self.input_shape == (self.seq_len,):
            return (seq_len,)
        if self.is_image and image_size > 0:
            return (*self.input_shape[:-2], image_size, image_size)
        return self.input_shape

    def sequence_length(self, seq_len: int = 0) -> int | None:
        """The sequence length a workload runs at ``exp.seq_len`` (0 keeps the
        published one); None for a model without one, whatever ``seq_len`` says.

        >>> ModelInfo("m", "M", "d", (128,), 2, 8, seq_len=128).sequence_length(32)
        32
        """
        if self.seq_len is None:
            return None
        return seq_len or self.seq_len

    @property
    def real_data_kind(self) -> str:
        """``images``, ``text``, or ``""`` when the model reads synthetic data only."""
        if self.real_data:
            return self.real_data
        return "images" if self.domain in ("image classification", "input pipeline") else ""
